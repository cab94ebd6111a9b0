// The GPT preset's embedding block: token embedding + learned position embedding, then dropout.
#pragma once

#include <loom/layers/dropout.h>
#include <loom/layers/embedding.h>
#include <loom/models/model.h>

namespace loom {

// tokens [n, T] (i64) -> token_embedding[tokens] + position_embedding[0..T) -> dropout: [n, T, dim].
class TokenPositionEmbedding : public Layer {
 public:
  TokenPositionEmbedding(std::int64_t vocab, std::int64_t max_positions, std::int64_t dim, double dropout);

  std::string type() const override { return "TokenPositionEmbedding"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  std::int64_t max_positions_;
  Embedding token_, position_;
  Dropout dropout_;
};

}  // namespace loom
