// CUDA kernels of the cross-entropy loss over log-probabilities [rows, C]: per-row losses (one
// block per row, summed on the host in double) and the gradient (one thread per element).
#include <vector>

#include <loom/core/cuda/context.h>
#include <loom/core/dtype_dispatch.h>

#include "cuda/block_reduce.cuh"
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
  sum = block_sum(sum);
  if (threadIdx.x == 0)
    row_loss[row] = t == ignore_index ? 0.0 : -(1.0 - smoothing) * lp[t] - smoothing / static_cast<double>(classes) * sum;
}

template <typename T, typename Index>
__global__ void grad_kernel(const T* log_probs, const Index* targets, long long n, long long classes,
                            long long ignore_index, T uniform, T on, T scale, T* grad) {
  LOOM_GRID_LOOP(i, n) {
    const long long row = i / classes, c = i % classes;
    const long long t = static_cast<long long>(targets[row]);
    grad[i] = t == ignore_index ? T(0) : (exp(log_probs[i]) - uniform - (c == t ? on : T(0))) * scale;
  }
}

template <typename T, typename Index>
double loss_sum(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index, double smoothing) {
  const long long rows = log_probs.size(0), classes = log_probs.size(1);
  Tensor row_loss = Tensor::empty(Shape{rows}, DType::f64, log_probs.device());
  row_loss_kernel<<<static_cast<unsigned int>(rows), 128, 0, cuda::stream(log_probs.device().index)>>>(
      log_probs.data<T>(), targets.data<Index>(), classes, ignore_index, smoothing, row_loss.data<double>());
  LOOM_CUDA_CHECK(cudaGetLastError());
  double total = 0;
  for (double v : row_loss.to_double_vector()) total += v;
  return total;
}

template <typename T, typename Index>
void gradient(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index, double smoothing,
              double scale, Tensor& grad) {
  const long long n = log_probs.numel(), classes = log_probs.size(1);
  grad_kernel<<<cuda::blocks_for(n), 256, 0, cuda::stream(log_probs.device().index)>>>(
      log_probs.data<T>(), targets.data<Index>(), n, classes, ignore_index,
      static_cast<T>(smoothing / static_cast<double>(classes)), static_cast<T>(1.0 - smoothing), static_cast<T>(scale),
      grad.data<T>());
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

double cross_entropy_sum(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index, double smoothing) {
  if (log_probs.numel() == 0) return 0.0;
  const bool wide = targets.dtype() == DType::i64;
  return dispatch_floating(log_probs.dtype(), "cuda::cross_entropy_sum", [&]<typename T>(T) {
    return wide ? loss_sum<T, std::int64_t>(log_probs, targets, ignore_index, smoothing)
                : loss_sum<T, std::int32_t>(log_probs, targets, ignore_index, smoothing);
  });
}

void cross_entropy_backward(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index,
                            double smoothing, double scale, Tensor& grad_logits) {
  if (log_probs.numel() == 0) return;
  const bool wide = targets.dtype() == DType::i64;
  dispatch_floating(log_probs.dtype(), "cuda::cross_entropy_backward", [&]<typename T>(T) {
    if (wide)
      gradient<T, std::int64_t>(log_probs, targets, ignore_index, smoothing, scale, grad_logits);
    else
      gradient<T, std::int32_t>(log_probs, targets, ignore_index, smoothing, scale, grad_logits);
  });
}

}  // namespace loom::cuda_kernels
