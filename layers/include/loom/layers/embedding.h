// Embedding: token ids [...] (i64 or i32) -> rows of a [num_embeddings, dim] table, [..., dim].
// Like PyTorch's nn.Embedding: weights start N(0, 1), the padding_idx row starts at zero and never
// receives gradient. Ids outside the table raise an error naming the layer and the id.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class Embedding : public UnaryLayer {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t dim, std::int64_t padding_idx = -1);

  std::int64_t num_embeddings() const { return num_embeddings_; }
  std::int64_t dim() const { return dim_; }
  std::int64_t padding_idx() const { return padding_idx_; }
  Parameter& weight() { return weight_; }

  std::string type() const override { return "Embedding"; }
  Tensor forward_tensor(const Tensor& ids, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;  // undefined (ids)
  std::vector<Parameter*> local_parameters() override { return {&weight_}; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  std::int64_t num_embeddings_, dim_, padding_idx_;
  Parameter weight_;
};

}  // namespace loom
