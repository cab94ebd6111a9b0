// Cross-entropy and MSE losses (see loss.h). Cross-entropy saves the log-probabilities:
//   loss_r = -(1 - s) logp[r, t_r] - (s / C) sum_c logp[r, c]      (0 for ignored rows)
//   dlogits[r, c] = (softmax[r, c] - (1 - s) [c == t_r] - s / C) * dloss / denominator
#include <loom/layers/loss.h>

#include <cmath>

#include <loom/core/ops.h>

#include "cuda/kernels.h"
#include "layer_util.h"

namespace loom {

namespace {

std::vector<std::int64_t> targets_on_host(const Tensor& targets) {
  MemoryCategoryScope scratch(MemoryCategory::workspace);  // a host copy for the index checks
  const Tensor h = targets.to(Device::cpu());
  if (h.dtype() == DType::i64) return {h.data<std::int64_t>(), h.data<std::int64_t>() + h.numel()};
  LOOM_CHECK(h.dtype() == DType::i32, "targets must be i64 or i32, got ", dtype_name(h.dtype()));
  return {h.data<std::int32_t>(), h.data<std::int32_t>() + h.numel()};
}

}  // namespace

std::int64_t count_targets(const Tensor& targets, std::int64_t ignore_index) {
  std::int64_t count = 0;
  for (std::int64_t t : targets_on_host(targets)) count += t != ignore_index;
  return count;
}

CrossEntropyLoss::CrossEntropyLoss(std::int64_t ignore_index, double label_smoothing)
    : ignore_index_(ignore_index), label_smoothing_(label_smoothing) {
  LOOM_CHECK(label_smoothing >= 0.0 && label_smoothing <= 1.0, "CrossEntropyLoss: label_smoothing must be in [0, 1], got ",
             label_smoothing);
}

TensorList CrossEntropyLoss::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 2);
  const Tensor& logits = inputs[0];
  const Tensor& targets = inputs[1];
  LOOM_CHECK(logits.rank() >= 1 && is_floating(logits.dtype()), describe(), ": logits must be floating [..., C], got ",
             dtype_name(logits.dtype()), " ", logits.shape().str());
  LOOM_CHECK(targets.dtype() == DType::i64 || targets.dtype() == DType::i32, describe(),
             ": targets must be i64 or i32 class ids, got ", dtype_name(targets.dtype()));
  LOOM_CHECK(targets.numel() == logits.numel() / logits.size(-1), describe(), ": targets shape ",
             targets.shape().str(), " does not match logits shape ", logits.shape().str());
  LOOM_CHECK(targets.device() == logits.device(), describe(), ": targets on ", targets.device().str(), ", logits on ",
             logits.device().str());
  const std::int64_t classes = logits.size(-1), rows = logits.numel() / classes;
  const Tensor& host = ctx.host_targets;
  LOOM_CHECK(!host.defined() || (host.numel() == targets.numel() && host.device().is_cpu()), describe(),
             ": the host copy of the targets has shape ", host.defined() ? host.shape().str() : "", " on ",
             host.defined() ? host.device().str() : "", ", the targets ", targets.shape().str());
  const std::vector<std::int64_t> t = targets_on_host(host.defined() ? host : targets);
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    if (t[r] == ignore_index_) continue;
    LOOM_CHECK(t[r] >= 0 && t[r] < classes, describe(), ": target ", t[r], " at position ", r, " outside [0, ",
               classes, ")");
    ++count;
  }
  const double denominator = ctx.loss_denominator > 0 ? ctx.loss_denominator : static_cast<double>(count);

  Tensor logp = Tensor::empty(Shape{rows, classes}, logits.dtype(), logits.device());
  ops::log_softmax(logits.reshape(Shape{rows, classes}), logp);
  ctx.save("log_probs", logp);
  ctx.save("targets", targets);
  ctx.save_shape("target_count", Shape{count});  // a host fact for backward: no second copy of the targets
  const double s = label_smoothing_;
  if (logits.device().is_cuda()) {  // the loss stays on the device: nothing here waits for the GPU
    Tensor loss = Tensor::empty(Shape{}, logits.dtype(), logits.device());
    cuda_kernels::cross_entropy_loss(logp, targets, ignore_index_, s, denominator, loss);
    return {loss};
  }
  double total = 0.0;
  dispatch_floating(logits.dtype(), describe(), [&]<typename T>(T) {
    const T* lp = logp.data<T>();
    for (std::int64_t r = 0; r < rows; ++r) {
      if (t[r] == ignore_index_) continue;
      const T* row = lp + r * classes;
      double row_sum = 0.0;
      if (s > 0)
        for (std::int64_t c = 0; c < classes; ++c) row_sum += row[c];
      total += -(1.0 - s) * row[t[r]] - s / static_cast<double>(classes) * row_sum;
    }
  });
  return {Tensor::full(Shape{}, total / denominator, logits.dtype(), logits.device())};
}

TensorList CrossEntropyLoss::backward(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined() && grad_outputs[0].numel() == 1, describe(),
             ": backward expects the scalar gradient of the loss");
  const Tensor logp = ctx.get("log_probs");
  const Tensor targets = ctx.get("targets");
  const std::int64_t rows = logp.size(0), classes = logp.size(1);
  const std::int64_t count = ctx.get_shape("target_count")[0];
  const double denominator = ctx.loss_denominator > 0 ? ctx.loss_denominator : static_cast<double>(count);
  const double s = label_smoothing_;
  Tensor grad = detail::empty_like(logp);
  if (logp.device().is_cuda()) {  // the loss's gradient is read on the device (a host one is copied there)
    const Tensor& grad_loss = grad_outputs[0];
    const bool on_device = grad_loss.device() == logp.device() && grad_loss.dtype() == logp.dtype();
    const Tensor scale = on_device ? grad_loss : Tensor::full(Shape{}, grad_loss.item(), logp.dtype(), logp.device());
    cuda_kernels::cross_entropy_backward(logp, targets, ignore_index_, s, scale, denominator, grad);
  } else {
    const std::vector<std::int64_t> t = targets_on_host(targets);
    const double scale = grad_outputs[0].item() / denominator;
    dispatch_floating(logp.dtype(), describe(), [&]<typename T>(T) {
      const T* lp = logp.data<T>();
      T* g = grad.data<T>();
      const T uniform = static_cast<T>(s / static_cast<double>(classes));
      const T on = static_cast<T>(1.0 - s);
      const T k = static_cast<T>(scale);
      for (std::int64_t r = 0; r < rows; ++r) {
        T* gr = g + r * classes;
        if (t[r] == ignore_index_) {
          for (std::int64_t c = 0; c < classes; ++c) gr[c] = T(0);
          continue;
        }
        const T* row = lp + r * classes;
        for (std::int64_t c = 0; c < classes; ++c) gr[c] = (std::exp(row[c]) - uniform) * k;
        gr[t[r]] -= on * k;
      }
    });
  }
  const Shape logits_shape = [&] {
    std::vector<std::int64_t> dims = targets.shape().vec();
    dims.push_back(classes);
    return Shape(dims);
  }();
  ctx.clear();
  return {grad.reshape(logits_shape), Tensor()};
}

std::vector<Shape> CrossEntropyLoss::output_shapes(const std::vector<Shape>& /*input_shapes*/) const {
  return {Shape{}};
}

double CrossEntropyLoss::flops(const std::vector<Shape>& input_shapes) const {
  return 5.0 * static_cast<double>(input_shapes.at(0).numel());
}

std::size_t CrossEntropyLoss::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(input_shapes.at(0)) + static_cast<std::size_t>(input_shapes.at(0).outer(-1)) * 8;
}

// ---- MSE ---------------------------------------------------------------------------------------

TensorList MSELoss::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 2);
  const Tensor& prediction = inputs[0];
  detail::check_same_shape(*this, "target", inputs[1], prediction.shape());
  detail::check_like(*this, "target", inputs[1], prediction, "prediction");
  Tensor diff = detail::empty_like(prediction);
  ops::sub(prediction, inputs[1], diff);
  const double denominator = ctx.loss_denominator > 0 ? ctx.loss_denominator : static_cast<double>(diff.numel());
  const double loss = ops::sum_of_squares(diff) / denominator;
  ctx.save("diff", diff);
  return {Tensor::full(Shape{}, loss, prediction.dtype(), prediction.device())};
}

TensorList MSELoss::backward(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined() && grad_outputs[0].numel() == 1, describe(),
             ": backward expects the scalar gradient of the loss");
  const Tensor diff = ctx.get("diff");
  const double denominator = ctx.loss_denominator > 0 ? ctx.loss_denominator : static_cast<double>(diff.numel());
  const double scale = 2.0 * grad_outputs[0].item() / denominator;
  Tensor grad_prediction = diff.clone();
  ops::scale(grad_prediction, scale);
  Tensor grad_target = diff.clone();
  ops::scale(grad_target, -scale);
  ctx.clear();
  return {grad_prediction, grad_target};
}

std::vector<Shape> MSELoss::output_shapes(const std::vector<Shape>& /*input_shapes*/) const { return {Shape{}}; }

double MSELoss::flops(const std::vector<Shape>& input_shapes) const {
  return 3.0 * static_cast<double>(input_shapes.at(0).numel());
}

std::size_t MSELoss::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return detail::f32_bytes(input_shapes.at(0));
}

}  // namespace loom
