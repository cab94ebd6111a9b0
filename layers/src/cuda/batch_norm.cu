// BatchNorm2d on CUDA (cuda/batch_norm.h): cuDNN spatial batch norm for training and inference,
// and small kernels for what cuDNN lacks (the backward with fixed statistics, 1/sqrt(var + eps)).
// cuDNN updates the running variance with the unbiased batch variance, as PyTorch does.
#include "cuda/batch_norm.h"

#include <loom/core/cuda/block_reduce.cuh>
#include <loom/core/dtype_dispatch.h>

#include "cuda/cudnn_util.h"

namespace loom::cuda_kernels {

namespace {

constexpr unsigned int kThreads = 256;

struct Descriptors {
  cudnn_util::TensorDescriptor x, per_channel;
  Descriptors(const Tensor& tensor) : x(tensor.shape(), tensor.dtype()) {
    LOOM_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(per_channel.get(), x.get(), CUDNN_BATCHNORM_SPATIAL));
  }
};

template <typename T>
__global__ void inverse_std_kernel(const T* var, T eps, T* invstd, long long channels) {
  const long long c = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (c < channels) invstd[c] = T(1) / sqrt(var[c] + eps);
}

// One block per channel: the channel's two sums by a block reduction, then dx in a second pass.
template <typename T>
__global__ void backward_fixed_statistics_kernel(const T* x, const T* grad_y, const T* weight, const T* mean,
                                                 const T* invstd, T* grad_x, T* grad_weight, T* grad_bias,
                                                 long long batch, long long channels, long long plane) {
  const long long c = blockIdx.x;
  const T m = mean[c], is = invstd[c], scale = weight[c] * invstd[c];
  double a = 0, b = 0;
  for (long long k = threadIdx.x; k < batch * plane; k += blockDim.x) {
    const long long i = (k / plane * channels + c) * plane + k % plane;
    a += grad_y[i];
    b += static_cast<double>(grad_y[i]) * static_cast<double>((x[i] - m) * is);
    grad_x[i] = grad_y[i] * scale;
  }
  const double sum_dy = cuda::block_sum(a), sum_dy_xhat = cuda::block_sum(b);
  if (threadIdx.x == 0) {
    grad_weight[c] += static_cast<T>(sum_dy_xhat);
    grad_bias[c] += static_cast<T>(sum_dy);
  }
}

}  // namespace

void batch_norm_forward_training(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& running_mean,
                                 Tensor& running_var, double momentum, double eps, Tensor& y, Tensor& saved_mean,
                                 Tensor& saved_invstd) {
  const Descriptors d(x);
  const cudnn_util::Scalars s(x.dtype());
  LOOM_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
      cuda::cudnn(x.device().index), CUDNN_BATCHNORM_SPATIAL, s.one(), s.zero(), d.x.get(), x.raw_data(), d.x.get(),
      y.raw_data(), d.per_channel.get(), weight.raw_data(), bias.raw_data(), momentum, running_mean.raw_data(),
      running_var.raw_data(), eps, saved_mean.raw_data(), saved_invstd.raw_data()));
}

void batch_norm_forward_inference(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                  const Tensor& running_mean, const Tensor& running_var, double eps, Tensor& y) {
  const Descriptors d(x);
  const cudnn_util::Scalars s(x.dtype());
  LOOM_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(
      cuda::cudnn(x.device().index), CUDNN_BATCHNORM_SPATIAL, s.one(), s.zero(), d.x.get(), x.raw_data(), d.x.get(),
      y.raw_data(), d.per_channel.get(), weight.raw_data(), bias.raw_data(), running_mean.raw_data(),
      running_var.raw_data(), eps));
}

void batch_norm_backward_training(const Tensor& x, const Tensor& grad_y, const Tensor& weight,
                                  const Tensor& saved_mean, const Tensor& saved_invstd, double eps, Tensor& grad_x,
                                  Tensor& grad_weight, Tensor& grad_bias) {
  const Descriptors d(x);
  const cudnn_util::Scalars s(x.dtype());
  // Data gradient written (beta 0), parameter gradients accumulated (beta 1).
  LOOM_CUDNN_CHECK(cudnnBatchNormalizationBackward(
      cuda::cudnn(x.device().index), CUDNN_BATCHNORM_SPATIAL, s.one(), s.zero(), s.one(), s.one(), d.x.get(),
      x.raw_data(), d.x.get(), grad_y.raw_data(), d.x.get(), grad_x.raw_data(), d.per_channel.get(),
      weight.raw_data(), grad_weight.raw_data(), grad_bias.raw_data(), eps, saved_mean.raw_data(),
      saved_invstd.raw_data()));
}

void batch_norm_backward_inference(const Tensor& x, const Tensor& grad_y, const Tensor& weight, const Tensor& mean,
                                   const Tensor& invstd, Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias) {
  const long long batch = x.size(0), channels = x.size(1), plane = x.size(2) * x.size(3);
  cudaStream_t stream = cuda::stream(x.device().index);
  dispatch_floating(x.dtype(), "cuda::batch_norm_backward_inference", [&]<typename T>(T) {
    backward_fixed_statistics_kernel<T><<<static_cast<unsigned int>(channels), kThreads, 0, stream>>>(
        x.data<T>(), grad_y.data<T>(), weight.data<T>(), mean.data<T>(), invstd.data<T>(),
        grad_x.data<T>(), grad_weight.data<T>(), grad_bias.data<T>(), batch, channels, plane);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

void inverse_std(const Tensor& var, double eps, Tensor& invstd) {
  const long long channels = var.numel();
  cudaStream_t stream = cuda::stream(var.device().index);
  const unsigned int blocks = cuda::blocks_for(channels);
  dispatch_floating(var.dtype(), "cuda::inverse_std", [&]<typename T>(T) {
    inverse_std_kernel<T><<<blocks, kThreads, 0, stream>>>(var.data<T>(), static_cast<T>(eps), invstd.data<T>(),
                                                           channels);
  });
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda_kernels
