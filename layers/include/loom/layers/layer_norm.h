// LayerNorm over the last dim: y = (x - mean) / sqrt(var + eps) * gamma + beta (biased variance),
// PyTorch's nn.LayerNorm(dim). gamma starts at 1, beta at 0. Forward saves x, the row means and
// the reciprocal standard deviations; statistics are accumulated in double on the CPU.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class LayerNorm : public UnaryLayer {
 public:
  explicit LayerNorm(std::int64_t dim, double eps = 1e-5, bool elementwise_affine = true);

  std::int64_t dim() const { return dim_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

  std::string type() const override { return "LayerNorm"; }
  std::vector<Parameter*> local_parameters() override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override { return input_shapes; }
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;

 private:
  std::int64_t dim_;
  double eps_;
  bool affine_;
  Parameter weight_, bias_;
};

}  // namespace loom
