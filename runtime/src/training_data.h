// The Trainer's data: the training split read batch by batch in each epoch's seeded order (the
// same order on every rank, so each rank reads exactly its rows), and the test split read in order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <loom/models/dataset.h>
#include <loom/models/model.h>
#include <loom/runtime/executor.h>

namespace loom::runtime::detail {

class TrainingData {
 public:
  // Opens the training split of dataset `data` (--data), and the test split when `with_test`.
  TrainingData(const std::string& data, std::uint64_t seed, const ModelSpec& spec, bool with_test);
  // Opens the test split now, if it is not open yet.
  void open_test(const ModelSpec& spec);

  std::int64_t train_size() const { return train_->size(); }
  bool has_test() const { return test_ != nullptr; }
  std::int64_t test_size() const { return test_ ? test_->size() : 0; }

  // Rows of global batch b of `global_batch` samples: the epoch's order (epoch b / steps per epoch,
  // which is train_size() / global_batch), batch b % steps per epoch.
  BatchReader train_reader(std::int64_t global_batch);
  // Rows of a test batch that starts at test sample `start`.
  BatchReader test_reader(std::int64_t start) const;

 private:
  std::string data_;
  std::unique_ptr<Dataset> train_, test_;
  std::uint64_t seed_;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> order_;
};

}  // namespace loom::runtime::detail
