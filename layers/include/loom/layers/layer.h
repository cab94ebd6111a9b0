// The Layer interface every layer, block and model chain implements.
//
// Contract (../DESIGN.md, Contracts):
//   forward(inputs, ctx) -> outputs       ctx holds what forward saved for ONE micro-batch; several
//                                         contexts are alive at once under 1F1B.
//   backward(grad_outputs, ctx) -> grads  returns activation gradients (=) and ACCUMULATES (+=)
//                                         parameter gradients; it consumes and frees ctx.
//   backward_input / backward_weight      the same backward split in two (zero-bubble schedules):
//                                         backward_input returns activation gradients and keeps
//                                         what backward_weight needs in ctx; backward_weight then
//                                         accumulates parameter gradients and frees ctx.
// Inputs and outputs are lists of tensors (GNMT passes several across a stage boundary).
// Parameters carry stable hierarchical names; their initial values depend only on
// (seed, global block index, name) through the counter-based RNG.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <loom/core/tensor.h>

namespace loom {

// How a parameter is initialised (PyTorch's schemes expressed as distributions).
struct Init {
  enum class Kind : std::uint8_t { zeros, ones, constant, uniform, normal } kind = Kind::zeros;
  double a = 0.0;  // uniform: low;  normal: mean;  constant: value
  double b = 0.0;  // uniform: high; normal: stddev
  static Init zeros() { return {Kind::zeros, 0, 0}; }
  static Init ones() { return {Kind::ones, 1, 0}; }
  static Init constant(double v) { return {Kind::constant, v, 0}; }
  static Init uniform(double lo, double hi) { return {Kind::uniform, lo, hi}; }
  static Init normal(double mean, double stddev) { return {Kind::normal, mean, stddev}; }
};

struct Parameter {
  std::string name;  // local name inside its layer ("weight"); full names are built by parameters()
  Tensor value;
  Tensor grad;       // same shape; zeroed by zero_grad(); accumulated by backward
  Init init;
  bool trainable = true;  // false for buffers such as BatchNorm running statistics
};

// A parameter seen from the outside: its full hierarchical name and the object itself.
struct NamedParameter {
  std::string name;  // e.g. "blocks.3.attn.qkv.weight"
  Parameter* parameter;
};

// What forward saved for one micro-batch, plus the facts forward needs about it.
class Context {
 public:
  bool training = true;
  std::uint64_t seed = 0;          // run seed (dropout)
  std::uint64_t step = 0;          // optimizer step (dropout masks differ per step)
  std::int64_t first_sample = 0;   // global sample index of row 0 of this micro-batch (dropout)

  void save(std::string_view key, Tensor tensor);
  const Tensor& get(std::string_view key) const;  // throws loom::Error naming the key if absent
  bool has(std::string_view key) const;
  // Context of the i-th sub-layer; children share training/seed/step/first_sample.
  Context& child(std::size_t index);
  // Frees every saved tensor (recursively); called by backward when it is done.
  void clear();
  // Bytes of saved tensors (recursively), each storage counted once.
  std::size_t saved_bytes() const;

 private:
  std::vector<std::pair<std::string, Tensor>> saved_;
  std::vector<std::unique_ptr<Context>> children_;
};

class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string type() const = 0;  // "Linear", "LayerNorm", ...
  virtual TensorList forward(const TensorList& inputs, Context& ctx) = 0;
  virtual TensorList backward(const TensorList& grad_outputs, Context& ctx) = 0;
  // Split backward; the default runs the full backward in backward_input.
  virtual TensorList backward_input(const TensorList& grad_outputs, Context& ctx) {
    return backward(grad_outputs, ctx);
  }
  virtual void backward_weight(Context& /*ctx*/) {}

  // This layer's own parameters and its children, for the hierarchical names.
  virtual std::vector<Parameter*> local_parameters() { return {}; }
  virtual std::vector<std::pair<std::string, Layer*>> children() { return {}; }

  // All parameters with full names, depth first ("attn.qkv.weight"), prefixed by `prefix`.
  std::vector<NamedParameter> parameters(const std::string& prefix = "");
  // Initialise every parameter from (seed, block_index, full name) per its Init.
  void initialize(std::uint64_t seed, std::int64_t block_index, const std::string& prefix = "");
  void zero_grad();
  std::size_t parameter_bytes();
  // Moves parameters and gradients to a device / dtype (f64 for gradient checks).
  void to(Device device);
  void to(DType dtype);

  // Shape inference and cost estimates for the planner and memory model.
  virtual std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const = 0;
  virtual double flops(const std::vector<Shape>& input_shapes) const = 0;  // forward FLOPs
  virtual std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const = 0;  // saved by forward (f32)
};

using LayerPtr = std::unique_ptr<Layer>;

}  // namespace loom
