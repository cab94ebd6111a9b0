// The Trainer's data readers (see training_data.h).
#include "training_data.h"

#include <numeric>

#include <loom/base/error.h>

namespace loom::runtime::detail {

TrainingData::TrainingData(const std::string& data, std::uint64_t seed, const ModelSpec& spec, bool with_test)
    : data_(data), train_(open_dataset(data, DatasetSplit::train, spec.data, seed)), seed_(seed) {
  if (with_test) test_ = open_dataset(data, DatasetSplit::test, spec.data, seed);
}

void TrainingData::open_test(const ModelSpec& spec) {
  if (!test_) test_ = open_dataset(data_, DatasetSplit::test, spec.data, seed_);
}

BatchReader TrainingData::train_reader(std::int64_t global_batch) {
  const std::int64_t steps_per_epoch = train_->size() / global_batch;
  LOOM_CHECK(steps_per_epoch >= 1, data_, ": ", train_->size(), " samples, fewer than one global batch of ", global_batch);
  return [this, global_batch, steps_per_epoch](const BatchRequest& request, TensorList& inputs, Tensor& targets) {
    const std::int64_t epoch = request.step / steps_per_epoch;
    if (epoch != cached_epoch_) {
      order_ = epoch_order(train_->size(), seed_, epoch);
      cached_epoch_ = epoch;
    }
    const std::int64_t base = (request.step % steps_per_epoch) * global_batch + request.first;
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
