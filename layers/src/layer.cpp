// Layer base methods, parameter creation and initialisation, and the per-micro-batch Context.
#include <loom/layers/layer.h>

#include <algorithm>
#include <cmath>

#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/rng.h>

#include "layer_util.h"

namespace loom {

Init Init::fan_in_uniform(std::int64_t fan_in) {
  LOOM_CHECK(fan_in > 0, "fan_in_uniform: fan_in must be positive, got ", fan_in);
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return uniform(-bound, bound);
}

Init Init::xavier_uniform(std::int64_t fan_in, std::int64_t fan_out, double gain) {
  LOOM_CHECK(fan_in + fan_out > 0, "xavier_uniform: empty fans");
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform(-bound, bound);
}

Parameter make_parameter(std::string name, const Shape& shape, Init init, bool trainable, DType dtype,
                         Device device) {
  Parameter p;
  p.name = std::move(name);
  p.init = init;
  p.trainable = trainable;
  {
    MemoryCategoryScope scope(MemoryCategory::parameters);
    p.value = Tensor::zeros(shape, dtype, device);
  }
  if (trainable) {
    MemoryCategoryScope scope(MemoryCategory::gradients);
    p.grad = Tensor::zeros(shape, dtype, device);
  }
  return p;
}

std::string join_name(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return name;
  if (name.empty()) return prefix;
  return prefix + "." + name;
}

// ---- Context -----------------------------------------------------------------------------------

void Context::save(std::string_view key, Tensor tensor) {
  for (auto& [k, t] : saved_)
    if (k == key) {
      t = std::move(tensor);
      return;
    }
  saved_.emplace_back(std::string(key), std::move(tensor));
}

const Tensor& Context::get(std::string_view key) const {
  for (const auto& [k, t] : saved_)
    if (k == key) return t;
  LOOM_THROW("context has no saved tensor '", key, "' (was forward run with this context, and backward run only once?)");
}

bool Context::has(std::string_view key) const {
  return std::any_of(saved_.begin(), saved_.end(), [&](const auto& entry) { return entry.first == key; });
}

void Context::save_shape(std::string_view key, const Shape& shape) {
  for (auto& [k, s] : shapes_)
    if (k == key) {
      s = shape;
      return;
    }
  shapes_.emplace_back(std::string(key), shape);
}

const Shape& Context::get_shape(std::string_view key) const {
  for (const auto& [k, s] : shapes_)
    if (k == key) return s;
  LOOM_THROW("context has no saved shape '", key, "'");
}

Context& Context::child(std::size_t index) {
  while (children_.size() <= index) children_.push_back(std::make_unique<Context>());
  Context& c = *children_[index];
  c.training = training;
  c.seed = seed;
  c.step = step;
  c.first_sample = first_sample;
  c.loss_denominator = loss_denominator;
  return c;
}

void Context::clear() {
  host_targets = Tensor();
  saved_.clear();
  shapes_.clear();
  children_.clear();
}

void Context::collect_storages(std::vector<const Storage*>& storages) const {
  for (const auto& [key, tensor] : saved_)
    if (tensor.defined()) storages.push_back(tensor.storage().get());
  for (const auto& c : children_) c->collect_storages(storages);
}

std::size_t Context::saved_bytes() const {
  std::vector<const Storage*> storages;
  collect_storages(storages);
  std::sort(storages.begin(), storages.end());
  storages.erase(std::unique(storages.begin(), storages.end()), storages.end());
  std::size_t bytes = 0;
  for (const Storage* s : storages) bytes += s->bytes();
  return bytes;
}

// ---- Layer -------------------------------------------------------------------------------------

std::vector<NamedParameter> Layer::parameters(const std::string& prefix) {
  std::vector<NamedParameter> out;
  for (Parameter* p : local_parameters()) out.push_back({join_name(prefix, p->name), p});
  for (auto& [child_name, child] : children()) {
    auto sub = child->parameters(join_name(prefix, child_name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

namespace {

void draw(Parameter& p, std::uint64_t seed, std::int64_t block_index, const std::string& full_name) {
  const std::uint64_t key = rng::stream_key(full_name, static_cast<std::uint64_t>(block_index));
  const Init& init = p.init;
  switch (init.kind) {
    case Init::Kind::zeros: ops::fill(p.value, 0.0); break;
    case Init::Kind::ones: ops::fill(p.value, 1.0); break;
    case Init::Kind::constant: ops::fill(p.value, init.a); break;
    case Init::Kind::uniform: rng::uniform(p.value, seed, key, init.a, init.b); break;
    case Init::Kind::normal: rng::normal(p.value, seed, key, init.a, init.b); break;
  }
  if (init.zero_row >= 0) {
    LOOM_CHECK(p.value.rank() >= 1 && init.zero_row < p.value.size(0), "parameter '", full_name,
               "': zero_row ", init.zero_row, " outside shape ", p.value.shape().str());
    Tensor row = p.value.slice(init.zero_row, init.zero_row + 1);
    ops::fill(row, 0.0);
  }
}

}  // namespace

void Layer::initialize(std::uint64_t seed, std::int64_t block_index, const std::string& prefix) {
  name_ = prefix;
  block_index_ = block_index;
  for (Parameter* p : local_parameters()) draw(*p, seed, block_index, join_name(prefix, p->name));
  for (auto& [child_name, child] : children()) child->initialize(seed, block_index, join_name(prefix, child_name));
}

void Layer::zero_grad() {
  for (auto& np : parameters())
    if (np.parameter->grad.defined()) ops::fill(np.parameter->grad, 0.0);
}

std::size_t Layer::parameter_bytes() {
  std::size_t bytes = 0;
  for (auto& np : parameters()) bytes += np.parameter->value.nbytes();
  return bytes;
}

namespace {

template <typename Convert>
void convert_parameters(Layer& layer, Convert convert) {
  for (auto& np : layer.parameters()) {
    Parameter& p = *np.parameter;
    {
      MemoryCategoryScope scope(MemoryCategory::parameters);
      p.value = convert(p.value);
    }
    if (p.grad.defined()) {
      MemoryCategoryScope scope(MemoryCategory::gradients);
      p.grad = convert(p.grad);
    }
  }
}

}  // namespace

void Layer::notify_moved(Layer& layer) {
  layer.on_moved();
  for (auto& [child_name, child] : layer.children()) notify_moved(*child);
}

void Layer::to(Device device) {
  convert_parameters(*this, [&](const Tensor& t) { return t.device() == device ? t : t.to(device); });
  notify_moved(*this);
}

void Layer::to(DType dtype) {
  convert_parameters(*this, [&](const Tensor& t) { return t.dtype() == dtype ? t : t.to(dtype); });
  notify_moved(*this);
}

std::string Layer::describe() const {
  return type() + " '" + name_ + "'";
}

// ---- SplitBackwardLayer, UnaryLayer ------------------------------------------------------------

TensorList SplitBackwardLayer::backward(const TensorList& grad_outputs, Context& ctx) {
  TensorList grad_inputs = backward_input(grad_outputs, ctx);
  backward_weight(ctx);
  return grad_inputs;
}

TensorList UnaryLayer::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 1);
  return {forward_tensor(inputs[0], ctx)};
}

TensorList UnaryLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  return {backward_input_tensor(grad_outputs[0], ctx)};
}

}  // namespace loom
