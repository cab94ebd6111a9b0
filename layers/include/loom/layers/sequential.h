// Sequential: layers applied one after another inside one block (an MLP, a conv stack). The
// outputs of layer i are the inputs of layer i+1; each layer keeps its state in ctx.child(i).
// Forward charges the tensors it creates to MemoryCategory::activations (what it saves lives until
// backward); a whole backward charges its temporaries to MemoryCategory::workspace; the split
// backward charges to activations, since backward_input keeps what backward_weight needs.
#pragma once

#include <string>
#include <vector>

#include <loom/layers/layer.h>

namespace loom {

class Sequential : public Layer {
 public:
  Sequential() = default;

  // Appends a layer; its name defaults to its index ("0", "1", ...; a Chain's global block index).
  Sequential& add(LayerPtr layer, std::string name = "");
  template <typename L, typename... Args>
  L& emplace(Args&&... args) {
    auto layer = std::make_unique<L>(std::forward<Args>(args)...);
    L& ref = *layer;
    add(std::move(layer));
    return ref;
  }

  std::size_t size() const { return layers_.size(); }
  Layer& at(std::size_t index) const;
  const std::string& layer_name(std::size_t index) const;

  std::string type() const override { return "Sequential"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

 protected:
  std::vector<LayerPtr> layers_;
  std::vector<std::string> names_;
  std::int64_t first_index_ = 0;  // index of layers_[0] for default names
};

}  // namespace loom
