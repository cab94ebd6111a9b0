// MaxPool2d / AvgPool2d on CUDA through cuDNN (cuda/pooling.h). Max pooling uses the
// deterministic mode and propagates NaN, as the CPU kernel does.
#include "cuda/pooling.h"

#include "cuda/cudnn_util.h"

namespace loom::cuda_kernels {

namespace {

class PoolingDescriptor {
 public:
  PoolingDescriptor(PoolMode mode, const WindowGeometry& g) {
    LOOM_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&desc_));
    const cudnnPoolingMode_t cudnn_mode = mode == PoolMode::max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                          : mode == PoolMode::average_include_padding
                                              ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                              : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    LOOM_CUDNN_CHECK(cudnnSetPooling2dDescriptor(desc_, cudnn_mode, CUDNN_PROPAGATE_NAN, static_cast<int>(g.kernel.h),
                                                 static_cast<int>(g.kernel.w), static_cast<int>(g.padding.h),
                                                 static_cast<int>(g.padding.w), static_cast<int>(g.stride.h),
                                                 static_cast<int>(g.stride.w)));
  }
  ~PoolingDescriptor() { cudnnDestroyPoolingDescriptor(desc_); }
  PoolingDescriptor(const PoolingDescriptor&) = delete;
  PoolingDescriptor& operator=(const PoolingDescriptor&) = delete;
  cudnnPoolingDescriptor_t get() const { return desc_; }

 private:
  cudnnPoolingDescriptor_t desc_ = nullptr;
};

}  // namespace

void pool2d_forward(PoolMode mode, const WindowGeometry& geometry, const Tensor& x, Tensor& y) {
  const PoolingDescriptor pool(mode, geometry);
  const cudnn_util::TensorDescriptor xd(x.shape(), x.dtype()), yd(y.shape(), y.dtype());
  const cudnn_util::Scalars s(x.dtype());
  LOOM_CUDNN_CHECK(cudnnPoolingForward(cuda::cudnn(x.device().index), pool.get(), s.one(), xd.get(), x.raw_data(),
                                       s.zero(), yd.get(), y.raw_data()));
}

void pool2d_backward(PoolMode mode, const WindowGeometry& geometry, const Tensor& x, const Tensor& y,
                     const Tensor& grad_y, Tensor& grad_x) {
  const PoolingDescriptor pool(mode, geometry);
  const cudnn_util::TensorDescriptor xd(x.shape(), x.dtype()), yd(y.shape(), y.dtype());
  const cudnn_util::Scalars s(x.dtype());
  LOOM_CUDNN_CHECK(cudnnPoolingBackward(cuda::cudnn(x.device().index), pool.get(), s.one(), yd.get(), y.raw_data(),
                                        yd.get(), grad_y.raw_data(), xd.get(), x.raw_data(), s.zero(), xd.get(),
                                        grad_x.raw_data()));
}

}  // namespace loom::cuda_kernels
