// What a one-rank reference run of the runtime tests reports (sequential.h's plain layer calls,
// sequential_reference.h's whole-batch training): each fills the fields it says it does.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace loom::test {

struct SequentialRun {
  std::vector<double> losses;                             // per step
  std::map<std::string, std::vector<double>> parameters;  // full name -> final values
  std::vector<std::vector<float>> logits;                 // per micro-batch of the first step
  std::map<std::string, std::vector<float>> gradients;    // of the first step, by parameter name
};

}  // namespace loom::test
