// Linear: y = x W^T + b over the last dim (x [..., in] -> y [..., out]), PyTorch's nn.Linear.
// Weight [out, in] and bias [out] start at U(-1/sqrt(in), 1/sqrt(in)) like PyTorch's.
// Backward splits into backward_input (dx = dy W) and backward_weight (dW += dy^T x, db += sum dy),
// all GEMMs through loom::ops (BLAS on the CPU, cuBLAS on CUDA).
#pragma once

#include <loom/layers/layer.h>

namespace loom {

class Linear : public UnaryLayer {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);

  std::int64_t in_features() const { return in_features_; }
  std::int64_t out_features() const { return out_features_; }
  bool has_bias() const { return has_bias_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }
  // Replaces the initial distributions (attention projections use xavier / zero bias, as PyTorch).
  void set_init(Init weight_init, Init bias_init);

  std::string type() const override { return "Linear"; }
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<Parameter*> local_parameters() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 private:
  std::int64_t in_features_, out_features_;
  bool has_bias_;
  Parameter weight_, bias_;
};

}  // namespace loom
