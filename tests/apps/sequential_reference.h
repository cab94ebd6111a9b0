// The independent reference for pipelined training: the whole model on one rank, the whole global
// batch in one forward/backward, the same optimizer and data order, no executor, no MPI.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "training.h"

namespace loom::test {

struct SequentialRun {
  std::vector<double> losses;                                // per step
  std::map<std::string, std::vector<double>> parameters;    // full name -> final values
};

SequentialRun train_sequentially(const apps::TrainOptions& options);

// ||a - b|| / max(||b||, tiny): the norm-wise relative error.
double norm_relative_error(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace loom::test
