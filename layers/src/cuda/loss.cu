// CUDA kernels of the cross-entropy loss over log-probabilities [rows, C]: per-row losses (one
// block per row) summed in row order in double on the device, as the CPU sums them, and the
// gradient (one thread per element) scaled by the loss's gradient read on the device: the host
// waits for neither (issue 33).

#include <loom/core/cuda/block_reduce.cuh>
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

namespace {

template <typename T, typename Index>
__global__ void row_loss_kernel(const T* log_probs, const Index* targets, long long classes, long long ignore_index,
                                double smoothing, double* row_loss) {
  const long long row = blockIdx.x;
  const long long t = static_cast<long long>(targets[row]);
  const T* lp = log_probs + row * classes;
  double sum = 0;
  if (t != ignore_index && smoothing > 0)
    for (long long c = threadIdx.x; c < classes; c += blockDim.x) sum += lp[c];
  sum = cuda::block_sum(sum);
  if (threadIdx.x == 0)
    row_loss[row] = t == ignore_index ? 0.0 : -(1.0 - smoothing) * lp[t] - smoothing / static_cast<double>(classes) * sum;
}

// *loss = (the row losses added in row order) / denominator: one thread, as the CPU's loop.
template <typename T>
__global__ void loss_total_kernel(const double* row_loss, long long rows, double denominator, T* loss) {
  double total = 0.0;
  for (long long r = 0; r < rows; ++r) total += row_loss[r];
  *loss = static_cast<T>(total / denominator);
}

template <typename T, typename Index>
__global__ void grad_kernel(const T* log_probs, const Index* targets, long long n, long long classes,
                            long long ignore_index, T uniform, T on, const T* grad_loss, double denominator, T* grad) {
  const T scale = static_cast<T>(static_cast<double>(*grad_loss) / denominator);
  LOOM_GRID_LOOP(i, n) {
    const long long row = i / classes, c = i % classes;
    const long long t = static_cast<long long>(targets[row]);
    grad[i] = t == ignore_index ? T(0) : (exp(log_probs[i]) - uniform - (c == t ? on : T(0))) * scale;
  }
}

template <typename T, typename Index>
void loss_total(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index, double smoothing,
                double denominator, Tensor& loss) {
  const long long rows = log_probs.size(0), classes = log_probs.size(1);
  cudaStream_t s = cuda::stream(log_probs.device().index);
  const MemoryCategoryScope scratch(MemoryCategory::workspace);
  Tensor row_loss = Tensor::empty(Shape{rows}, DType::f64, log_probs.device());
  row_loss_kernel<<<static_cast<unsigned int>(rows), 128, 0, s>>>(log_probs.data<T>(), targets.data<Index>(), classes,
                                                                 ignore_index, smoothing, row_loss.data<double>());
  loss_total_kernel<<<1, 1, 0, s>>>(row_loss.data<double>(), rows, denominator, loss.data<T>());
  LOOM_CUDA_CHECK(cudaGetLastError());
}

template <typename T, typename Index>
void gradient(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index, double smoothing,
              const Tensor& grad_loss, double denominator, Tensor& grad) {
  const long long n = log_probs.numel(), classes = log_probs.size(1);
  grad_kernel<<<cuda::blocks_for(n), 256, 0, cuda::stream(log_probs.device().index)>>>(
      log_probs.data<T>(), targets.data<Index>(), n, classes, ignore_index,
      static_cast<T>(smoothing / static_cast<double>(classes)), static_cast<T>(1.0 - smoothing), grad_loss.data<T>(),
      denominator, grad.data<T>());
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void cross_entropy_loss(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index, double smoothing,
                        double denominator, Tensor& loss) {
  if (log_probs.numel() == 0) {
    ops::fill(loss, 0.0 / denominator);
    return;
  }
  const bool wide = targets.dtype() == DType::i64;
  dispatch_floating(log_probs.dtype(), "cuda::cross_entropy_loss", [&]<typename T>(T) {
    if (wide)
      loss_total<T, std::int64_t>(log_probs, targets, ignore_index, smoothing, denominator, loss);
    else
      loss_total<T, std::int32_t>(log_probs, targets, ignore_index, smoothing, denominator, loss);
  });
}

void cross_entropy_backward(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index,
                            double smoothing, const Tensor& grad_loss, double denominator, Tensor& grad_logits) {
  if (log_probs.numel() == 0) return;
  const bool wide = targets.dtype() == DType::i64;
  dispatch_floating(log_probs.dtype(), "cuda::cross_entropy_backward", [&]<typename T>(T) {
    if (wide)
      gradient<T, std::int64_t>(log_probs, targets, ignore_index, smoothing, grad_loss, denominator, grad_logits);
    else
      gradient<T, std::int32_t>(log_probs, targets, ignore_index, smoothing, grad_loss, denominator, grad_logits);
  });
}

}  // namespace loom::cuda_kernels
