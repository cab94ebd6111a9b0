// BatchNorm2d over NCHW tensors, as torch.nn.BatchNorm2d (affine, tracking running statistics).
// Training (ctx.training): normalise with the batch's mean and biased variance per channel, and
// update running_mean / running_var (unbiased variance) with `momentum`. Evaluation: normalise
// with the running statistics. The running statistics are parameters with trainable = false
// (buffers: saved in checkpoints, never touched by optimizers). PyTorch's num_batches_tracked
// (only used when momentum is None) is not kept.
// Under micro-batching each micro-batch is one batch for the statistics, as in PyTorch.
// CUDA: cuDNN spatial batch norm; the evaluation-mode backward is a small kernel.
#pragma once

#include <loom/layers/layer.h>

namespace loom {

struct BatchNorm2dOptions {
  std::int64_t channels = 0;
  double eps = 1e-5;
  double momentum = 0.1;
};

class BatchNorm2d : public UnaryLayer {
 public:
  explicit BatchNorm2d(const BatchNorm2dOptions& options);

  std::string type() const override { return "BatchNorm2d"; }
  // [x: N, C, H, W] -> [y: N, C, H, W]
  Tensor forward_tensor(const Tensor& x, Context& ctx) override;
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override;
  std::vector<Parameter*> local_parameters() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const BatchNorm2dOptions& options() const { return options_; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }
  Parameter& running_mean() { return running_mean_; }
  Parameter& running_var() { return running_var_; }

 private:
  BatchNorm2dOptions options_;
  Parameter weight_, bias_, running_mean_, running_var_;
};

}  // namespace loom
