// Masked LM, permutation LM and the synthetic translation task over a token stream (dataset.h).
#include "token_tasks.h"

#include <loom/base/error.h>
#include <loom/core/philox.h>
#include <loom/core/rng.h>

namespace loom {

namespace {

class TokenTaskDataset final : public Dataset {
 public:
  TokenTaskDataset(std::unique_ptr<Dataset> stream, const DataShape& expected, DatasetSplit split,
                   std::uint64_t seed)
      : stream_(std::move(stream)), shape_(expected), seed_(seed),
        key_(rng::stream_key("token_task", static_cast<std::uint64_t>(expected.task),
                             split == DatasetSplit::train ? 0 : 1)) {
    LOOM_CHECK(expected.classes >= 3, stream_->name(), ": the token task needs a vocabulary of at least 3, the model has ",
               expected.classes);
  }
  std::string name() const override { return stream_->name(); }
  std::int64_t size() const override { return stream_->size(); }
  DataShape shape() const override { return shape_; }

  void fill(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const override {
    Tensor x, y;
    stream_->read(indices, x, y);
    const std::int64_t n = x.size(0), length = x.size(1);
    const std::int64_t* tokens = x.data<std::int64_t>();
    std::int64_t* in = inputs.data<std::int64_t>();
    std::int64_t* out = targets.data<std::int64_t>();
    for (std::int64_t r = 0; r < n; ++r) {
      const auto sample = static_cast<std::uint64_t>(indices[r]);
      switch (shape_.task) {
        case TokenTask::masked: mask(sample, tokens + r * length, in + r * length, out + r * length, length); break;
        case TokenTask::translate:
          translate(tokens + r * length, in + r * 2 * length, out + r * length, length);
          break;
        case TokenTask::permutation:
        case TokenTask::next:
          for (std::int64_t t = 0; t < length; ++t) in[r * length + t] = out[r * length + t] = tokens[r * length + t];
          break;
      }
    }
  }

 private:
  // BERT's recipe: 15% of positions predicted; of those 80% [MASK] (vocab - 1), 10% random, 10% kept.
  void mask(std::uint64_t sample, const std::int64_t* tokens, std::int64_t* in, std::int64_t* out,
            std::int64_t length) const {
    const std::int64_t mask_token = shape_.classes - 1;
    for (std::int64_t t = 0; t < length; ++t) {
      const std::int64_t token = tokens[t] % mask_token;  // the stream never yields the mask token
      const std::uint64_t at = (sample * static_cast<std::uint64_t>(length) + static_cast<std::uint64_t>(t)) * 2;
      const double u = philox::word(seed_, key_, at) / 4294967296.0;
      in[t] = token;
      out[t] = -100;
      if (u >= 0.15) continue;
      out[t] = token;
      if (u < 0.12) in[t] = mask_token;
      else if (u < 0.135) in[t] = philox::word(seed_, key_, at + 1) % static_cast<std::uint32_t>(mask_token);
    }
  }
  // Source s (tokens in [1, vocab - 2]); target = s reversed, each token shifted by one within
  // that range; decoder input = start token (vocab - 1), then the target shifted right.
  void translate(const std::int64_t* tokens, std::int64_t* in, std::int64_t* out, std::int64_t length) const {
    const std::int64_t range = shape_.classes - 2;
    for (std::int64_t t = 0; t < length; ++t) in[t] = 1 + tokens[t] % range;
    for (std::int64_t t = 0; t < length; ++t) out[t] = 1 + (in[length - 1 - t] - 1 + 1) % range;
    in[length] = shape_.classes - 1;
    for (std::int64_t t = 1; t < length; ++t) in[length + t] = out[t - 1];
  }

  std::unique_ptr<Dataset> stream_;
  DataShape shape_;
  std::uint64_t seed_, key_;
};

}  // namespace

DataShape token_stream_shape(const DataShape& expected) {
  LOOM_CHECK(expected.sample_shape.rank() == 1, "a token task needs token sequences, the model expects ",
             expected.sample_shape.str());
  const std::int64_t length =
      expected.task == TokenTask::translate ? expected.sample_shape[0] / 2 : expected.sample_shape[0];
  return {Shape{length}, DType::i64, Shape{length}, expected.classes, TokenTask::next};
}

std::unique_ptr<Dataset> with_token_task(std::unique_ptr<Dataset> stream, const DataShape& expected,
                                         DatasetSplit split, std::uint64_t seed) {
  return std::make_unique<TokenTaskDataset>(std::move(stream), expected, split, seed);
}

}  // namespace loom
