// Sequential and Chain: forward in order, backward in reverse, one child context per element.
#include <loom/layers/chain.h>
#include <loom/layers/sequential.h>

#include <loom/base/error.h>
#include <loom/core/memory.h>

namespace loom {

Sequential& Sequential::add(LayerPtr layer, std::string name) {
  LOOM_CHECK(layer != nullptr, "Sequential::add: null layer");
  if (name.empty()) name = std::to_string(first_index_ + static_cast<std::int64_t>(layers_.size()));
  layers_.push_back(std::move(layer));
  names_.push_back(std::move(name));
  return *this;
}

Layer& Sequential::at(std::size_t index) const {
  LOOM_CHECK(index < layers_.size(), type(), " '", name(), "': index ", index, " out of ", layers_.size(), " layers");
  return *layers_[index];
}

const std::string& Sequential::layer_name(std::size_t index) const {
  LOOM_CHECK(index < names_.size(), type(), " '", name(), "': index ", index, " out of ", names_.size(), " layers");
  return names_[index];
}

TensorList Sequential::forward(const TensorList& inputs, Context& ctx) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  if (layers_.empty()) return inputs;
  // The first layer reads the caller's list itself: a copy of it here would be a second holder of
  // the input, and a layer saves a 16-bit copy only of an input it holds alone (gemm_operand_storage.h).
  TensorList x = layers_[0]->forward(inputs, ctx.child(0));
  for (std::size_t i = 1; i < layers_.size(); ++i) x = layers_[i]->forward(x, ctx.child(i));
  return x;
}

TensorList Sequential::backward(const TensorList& grad_outputs, Context& ctx) {
  // Nothing a whole backward creates outlives it but the returned gradients: workspace.
  MemoryCategoryScope scope(MemoryCategory::workspace);
  TensorList g = grad_outputs;
  for (std::size_t i = layers_.size(); i-- > 0;) g = layers_[i]->backward(g, ctx.child(i));
  ctx.clear();
  return g;
}

TensorList Sequential::backward_input(const TensorList& grad_outputs, Context& ctx) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  TensorList g = grad_outputs;
  for (std::size_t i = layers_.size(); i-- > 0;) g = layers_[i]->backward_input(g, ctx.child(i));
  return g;
}

void Sequential::backward_weight(Context& ctx) {
  MemoryCategoryScope scope(MemoryCategory::activations);
  for (std::size_t i = layers_.size(); i-- > 0;) layers_[i]->backward_weight(ctx.child(i));
  ctx.clear();
}

std::vector<std::pair<std::string, Layer*>> Sequential::children() {
  std::vector<std::pair<std::string, Layer*>> out;
  for (std::size_t i = 0; i < layers_.size(); ++i) out.emplace_back(names_[i], layers_[i].get());
  return out;
}

std::vector<Shape> Sequential::output_shapes(const std::vector<Shape>& input_shapes) const {
  std::vector<Shape> shapes = input_shapes;
  for (const auto& layer : layers_) shapes = layer->output_shapes(shapes);
  return shapes;
}

double Sequential::flops(const std::vector<Shape>& input_shapes) const {
  std::vector<Shape> shapes = input_shapes;
  double total = 0.0;
  for (const auto& layer : layers_) {
    total += layer->flops(shapes);
    shapes = layer->output_shapes(shapes);
  }
  return total;
}

std::size_t Sequential::activation_bytes(const std::vector<Shape>& input_shapes) const {
  std::vector<Shape> shapes = input_shapes;
  std::size_t total = 0;
  for (const auto& layer : layers_) {
    total += layer->activation_bytes(shapes);
    shapes = layer->output_shapes(shapes);
  }
  return total;
}

// ---- Chain -------------------------------------------------------------------------------------

Chain Chain::extract(std::size_t begin, std::size_t end) {
  LOOM_CHECK(begin <= end && end <= layers_.size(), "Chain::extract: range [", begin, ", ", end, ") outside ",
             layers_.size(), " blocks");
  LOOM_CHECK(begin == 0 || end == layers_.size(), "Chain::extract: [", begin, ", ", end,
             ") is neither a prefix nor a suffix; the blocks left behind would change their global indices");
  Chain part(first_index_ + static_cast<std::int64_t>(begin));
  for (std::size_t i = begin; i < end; ++i) part.add(std::move(layers_[i]), names_[i]);
  layers_.erase(layers_.begin() + static_cast<std::ptrdiff_t>(begin), layers_.begin() + static_cast<std::ptrdiff_t>(end));
  names_.erase(names_.begin() + static_cast<std::ptrdiff_t>(begin), names_.begin() + static_cast<std::ptrdiff_t>(end));
  if (begin == 0) first_index_ += static_cast<std::int64_t>(end);
  return part;
}

void Chain::initialize(std::uint64_t seed, std::int64_t /*block_index*/, const std::string& prefix) {
  set_identity(first_index_, prefix);
  for (std::size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->initialize(seed, first_index_ + static_cast<std::int64_t>(i), join_name(prefix, names_[i]));
}

std::vector<BlockInfo> Chain::describe_blocks(const std::vector<Shape>& input_shapes) const {
  std::vector<BlockInfo> infos;
  std::vector<Shape> shapes = input_shapes;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    BlockInfo info;
    info.index = first_index_ + static_cast<std::int64_t>(i);
    info.name = names_[i];
    info.type = layers_[i]->type();
    info.parameter_bytes = layers_[i]->parameter_bytes();
    info.input_shapes = shapes;
    info.output_shapes = layers_[i]->output_shapes(shapes);
    info.flops = layers_[i]->flops(shapes);
    info.activation_bytes = layers_[i]->activation_bytes(shapes);
    for (const Shape& s : info.output_shapes) info.output_bytes += static_cast<std::size_t>(s.numel()) * 4;
    shapes = info.output_shapes;
    infos.push_back(std::move(info));
  }
  return infos;
}

}  // namespace loom
