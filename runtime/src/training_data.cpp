// The Trainer's data readers (see training_data.h).
#include "training_data.h"

#include <numeric>

#include <loom/core/error.h>

namespace loom::runtime::detail {

TrainingData::TrainingData(const std::string& data, std::uint64_t seed, const ModelSpec& spec,
                           std::int64_t global_batch, bool with_test)
    : data_(data), train_(open_dataset(data, DatasetSplit::train, spec.data, seed)), seed_(seed),
      global_batch_(global_batch) {
  if (with_test) test_ = open_dataset(data, DatasetSplit::test, spec.data, seed);
  steps_per_epoch_ = train_->size() / global_batch;
  LOOM_CHECK(steps_per_epoch_ >= 1, data, ": ", train_->size(), " samples, fewer than one global batch of ",
             global_batch);
}

void TrainingData::open_test(const ModelSpec& spec) {
  if (!test_) test_ = open_dataset(data_, DatasetSplit::test, spec.data, seed_);
}

BatchReader TrainingData::train_reader() {
  return [this](const BatchRequest& request, TensorList& inputs, Tensor& targets) {
    const std::int64_t epoch = request.batch / steps_per_epoch_;
    if (epoch != cached_epoch_) {
      order_ = epoch_order(train_->size(), seed_, epoch);
      cached_epoch_ = epoch;
    }
    const std::int64_t base = (request.batch % steps_per_epoch_) * global_batch_ + request.first;
    std::vector<std::int64_t> indices(order_.begin() + base, order_.begin() + base + request.count);
    Tensor x;
    train_->read(indices, x, targets);
    inputs = {x};
  };
}

BatchReader TrainingData::test_reader(std::int64_t start) const {
  return [this, start](const BatchRequest& request, TensorList& inputs, Tensor& targets) {
    std::vector<std::int64_t> indices(static_cast<std::size_t>(request.count));
    std::iota(indices.begin(), indices.end(), start + request.first);
    Tensor x;
    test_->read(indices, x, targets);
    inputs = {x};
  };
}

}  // namespace loom::runtime::detail
