// Losses as layers whose output is a scalar (shape []) and whose backward takes that scalar's
// gradient (1, or a loss-scale factor).
//
// Loss scaling (DESIGN.md): by default a loss is the mean over its own micro-batch. When
// ctx.loss_denominator > 0 it is sum / loss_denominator instead; setting that to the global
// batch's count of targets (count_targets() for cross-entropy, the element count for MSE) makes
// the micro-batch losses and their gradients add up to the global-batch mean, whatever the split.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

// Softmax cross-entropy: inputs {logits [..., C], targets [...] (i64 or i32 class ids)}, like
// PyTorch's nn.CrossEntropyLoss with ignore_index and label_smoothing: the mean is over the
// non-ignored targets; smoothing mixes the one-hot target with the uniform distribution.
class CrossEntropyLoss : public Layer {
 public:
  explicit CrossEntropyLoss(std::int64_t ignore_index = -100, double label_smoothing = 0.0);

  std::string type() const override { return "CrossEntropyLoss"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  std::int64_t ignore_index() const { return ignore_index_; }

 private:
  std::int64_t ignore_index_;
  double label_smoothing_;
};

// Number of targets that are not ignore_index (the cross-entropy denominator of a batch).
std::int64_t count_targets(const Tensor& targets, std::int64_t ignore_index = -100);

// Mean squared error: inputs {prediction, target} of one shape; gradients for both.
class MSELoss : public Layer {
 public:
  std::string type() const override { return "MSELoss"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override;
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;
};

}  // namespace loom
