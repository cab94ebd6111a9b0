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
//                                         Layers that implement the split derive from
//                                         SplitBackwardLayer, which writes backward as the two.
// Inputs and outputs are lists of tensors (GNMT passes several across a stage boundary). An input
// that needs no gradient (token ids, labels) gets an undefined Tensor in the returned list.
// Parameters carry stable hierarchical names; their initial values depend only on
// (seed, global block index, full name) through the counter-based RNG. initialize() also gives
// every layer its full name and block index, which error messages and dropout masks use.
#pragma once

#include <cstdint>
#include <deque>
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
  std::int64_t zero_row = -1;  // >= 0: this row (dim 0) is zeroed after drawing (Embedding padding)
  static Init zeros() { return {Kind::zeros, 0, 0}; }
  static Init ones() { return {Kind::ones, 1, 0}; }
  static Init constant(double v) { return {Kind::constant, v, 0}; }
  static Init uniform(double lo, double hi) { return {Kind::uniform, lo, hi}; }
  static Init normal(double mean, double stddev) { return {Kind::normal, mean, stddev}; }
  // PyTorch's default for Linear/Conv weights (kaiming_uniform_ with a = sqrt(5)) and biases:
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  static Init fan_in_uniform(std::int64_t fan_in);
  // xavier_uniform_: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out)).
  static Init xavier_uniform(std::int64_t fan_in, std::int64_t fan_out, double gain = 1.0);
};

struct Parameter {
  std::string name;  // local name inside its layer ("weight"); full names are built by parameters()
  Tensor value;
  Tensor grad;       // same shape; zeroed by zero_grad(); accumulated by backward (undefined for buffers)
  Init init;
  bool trainable = true;  // false for buffers such as BatchNorm running statistics
};

// A parameter with its value charged to MemoryCategory::parameters and, when trainable, a zeroed
// gradient charged to MemoryCategory::gradients. The value is zero until Layer::initialize.
Parameter make_parameter(std::string name, const Shape& shape, Init init, bool trainable = true,
                         DType dtype = DType::f32, Device device = Device::cpu());

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
  // Loss scaling (DESIGN.md): when > 0, losses return sum / loss_denominator instead of their own
  // mean, so that the losses (and gradients) of the micro-batches of a global batch add up to the
  // global-batch mean. Set it to the global batch's count of (non-ignored) targets.
  double loss_denominator = 0.0;
  // A loss's targets in host memory, when the caller has them there (loom's runtime reads its data
  // on the host): the loss checks and counts those instead of reading the device's copy back.
  Tensor host_targets;

  void save(std::string_view key, Tensor tensor);
  const Tensor& get(std::string_view key) const;  // throws loom::Error naming the key if absent
  bool has(std::string_view key) const;
  void save_shape(std::string_view key, const Shape& shape);
  const Shape& get_shape(std::string_view key) const;
  // Context of the i-th sub-layer; it takes training/seed/step/first_sample/loss_denominator from
  // this context on every call.
  Context& child(std::size_t index);
  // Frees every saved tensor (recursively); called by backward when it is done.
  void clear();
  // Bytes of saved tensors (recursively), each storage counted once.
  std::size_t saved_bytes() const;

 private:
  void collect_storages(std::vector<const Storage*>& storages) const;

  // Deques: a reference returned by get() stays valid while later save() calls add entries.
  std::deque<std::pair<std::string, Tensor>> saved_;
  std::deque<std::pair<std::string, Shape>> shapes_;
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
  // Initialise every parameter from (seed, block_index, full name) per its Init, and record the
  // full names and block index of this layer and its children. `prefix` is this layer's full name.
  virtual void initialize(std::uint64_t seed, std::int64_t block_index, const std::string& prefix = "");
  void zero_grad();
  std::size_t parameter_bytes();
  // Moves parameters and gradients to a device / dtype (f64 for gradient checks).
  void to(Device device);
  void to(DType dtype);

  // Set by initialize(): full hierarchical name ("blocks.3.attn") and global block index.
  const std::string& name() const { return name_; }
  std::int64_t block_index() const { return block_index_; }
  // "Linear 'blocks.3.fc1'", for error messages.
  std::string describe() const;

  // Shape inference and cost estimates for the planner and memory model.
  virtual std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const = 0;
  virtual double flops(const std::vector<Shape>& input_shapes) const = 0;  // forward FLOPs
  virtual std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const = 0;  // saved by forward (f32)

 protected:
  // Records the full name and block index without touching parameters (containers that assign
  // their children's indices themselves, like Chain).
  void set_identity(std::int64_t block_index, std::string name) {
    block_index_ = block_index;
    name_ = std::move(name);
  }
  // Called by to(Device)/to(DType) after the parameters moved (layers caching device state).
  virtual void on_moved() {}

 private:
  static void notify_moved(Layer& layer);

  std::string name_;
  std::int64_t block_index_ = 0;
};

// A layer whose backward is exactly its two halves in order: it implements backward_input and
// (when it has parameter gradients to defer) backward_weight; backward, written once here, runs
// backward_input and then backward_weight.
class SplitBackwardLayer : public Layer {
 public:
  TensorList backward(const TensorList& grad_outputs, Context& ctx) final;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override = 0;
};

// A layer with one input and one output tensor. It implements the single-tensor forms, which
// composite layers call directly; the list forms, written once here, check that the list holds
// exactly one defined tensor and wrap the result. backward_input_tensor returns the input
// gradient; parameter gradients it does not accumulate itself are left to backward_weight.
class UnaryLayer : public SplitBackwardLayer {
 public:
  TensorList forward(const TensorList& inputs, Context& ctx) final;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) final;
  virtual Tensor forward_tensor(const Tensor& x, Context& ctx) = 0;
  virtual Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) = 0;
};

using LayerPtr = std::unique_ptr<Layer>;

// "a.b" from ("a", "b"); either part may be empty.
std::string join_name(const std::string& prefix, const std::string& name);

}  // namespace loom
