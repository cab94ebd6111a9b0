// Element-wise activations: ReLU, GELU (exact erf form, PyTorch's default), Tanh, Sigmoid.
// One Activation class with a kind (the math lives in one host/device header shared by the CPU
// loop and the CUDA kernel); the named subclasses are what models write.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

enum class ActivationKind : unsigned char { relu, gelu, tanh, sigmoid };
ActivationKind parse_activation(const std::string& name);  // "relu", "gelu", "tanh", "sigmoid"

class Activation : public UnaryLayer {
 public:
  explicit Activation(ActivationKind kind) : kind_(kind) {}
  ActivationKind kind() const { return kind_; }

  std::string type() const override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override { return input_shapes; }
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;

 private:
  ActivationKind kind_;
};

class ReLU : public Activation {
 public:
  ReLU() : Activation(ActivationKind::relu) {}
};
class GELU : public Activation {
 public:
  GELU() : Activation(ActivationKind::gelu) {}
};
class Tanh : public Activation {
 public:
  Tanh() : Activation(ActivationKind::tanh) {}
};
class Sigmoid : public Activation {
 public:
  Sigmoid() : Activation(ActivationKind::sigmoid) {}
};

}  // namespace loom
