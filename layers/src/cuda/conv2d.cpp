// Conv2d on CUDA through cuDNN (cuda/conv2d.h). FMA math (no TF32 tensor-core rounding) so the
// results compare with the CPU's in fp32; backward algorithms are restricted to deterministic
// ones, so a run reproduces itself. Descriptors and algorithms are set up once per shape (Plan).
#include "cuda/conv2d.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cuda/cudnn_util.h"

namespace loom::cuda_kernels {

namespace {

using cudnn_util::FilterDescriptor;
using cudnn_util::TensorDescriptor;

class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor(const Conv2dOptions& o, DType dtype) {
    LOOM_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_));
    LOOM_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
        desc_, static_cast<int>(o.padding.h), static_cast<int>(o.padding.w), static_cast<int>(o.stride.h),
        static_cast<int>(o.stride.w), static_cast<int>(o.dilation.h), static_cast<int>(o.dilation.w),
        CUDNN_CROSS_CORRELATION, cudnn_util::data_type(dtype)));
    LOOM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(desc_, static_cast<int>(o.groups)));
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(desc_, CUDNN_FMA_MATH));
  }
  ~ConvolutionDescriptor() { cudnnDestroyConvolutionDescriptor(desc_); }
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

struct Descriptors {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  Descriptors(const Shape& x_shape, const Shape& w_shape, const Shape& y_shape, const Conv2dOptions& o, DType dtype)
      : x(x_shape, dtype), y(y_shape, dtype), w(w_shape, dtype), conv(o, dtype) {}
};

// The first (fastest) algorithm cuDNN's heuristics rank as usable; `deterministic_only` skips
// algorithms whose results depend on thread scheduling.
template <typename Algo, typename Perf, typename Query>
Algo pick(const char* what, bool deterministic_only, Query query) {
  std::vector<Perf> perf(16);
  int returned = 0;
  LOOM_CUDNN_CHECK(query(static_cast<int>(perf.size()), &returned, perf.data()));
  for (int i = 0; i < returned; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && (!deterministic_only || perf[i].determinism == CUDNN_DETERMINISTIC))
      return perf[i].algo;
  LOOM_THROW("cuDNN offers no ", deterministic_only ? "deterministic " : "", what, " algorithm for this convolution");
}

// One direction of one convolution shape, set up once: its descriptors, the algorithm cuDNN's
// heuristics picked and that algorithm's workspace size. The heuristics query costs more than a
// small convolution itself, and a model has a handful of shapes, so plans are kept for the
// process's life, per (direction, device, dtype, options, shapes).
template <typename Algo>
struct Plan {
  Descriptors d;
  Algo algo{};
  std::size_t workspace_bytes = 0;
  Plan(const Shape& x, const Shape& w, const Shape& y, const Conv2dOptions& o, DType dtype) : d(x, w, y, o, dtype) {}
};

std::vector<std::int64_t> plan_key(int device, const Shape& x, const Shape& w, const Shape& y, const Conv2dOptions& o,
                                   DType dtype) {
  std::vector<std::int64_t> key = {device,       static_cast<std::int64_t>(dtype), o.padding.h, o.padding.w,
                                   o.stride.h,   o.stride.w,                       o.dilation.h, o.dilation.w,
                                   o.groups};
  for (const Shape* shape : {&x, &w, &y}) {
    key.push_back(shape->rank());
    for (std::int64_t dim : shape->vec()) key.push_back(dim);
  }
  return key;
}

// The plan of `key` for algorithms of type Algo (one table per direction), made by `make` on first
// use. Never destroyed (a convolution may run during static destruction); plans are never erased,
// so the reference stays valid without the lock.
template <typename Algo, typename Make>
const Plan<Algo>& cached_plan(const std::vector<std::int64_t>& key, const Make& make) {
  static auto* plans = new std::map<std::vector<std::int64_t>, std::unique_ptr<Plan<Algo>>>();
  static auto* mutex = new std::mutex();
  std::lock_guard lock(*mutex);
  std::unique_ptr<Plan<Algo>>& plan = (*plans)[key];
  if (!plan) plan = make();
  return *plan;
}

// The plan of one direction for these shapes: `query(d, n, returned, perf)` ranks cuDNN's
// algorithms on the descriptors d, `workspace(d, algo, &bytes)` sizes the one picked.
template <typename Algo, typename Perf, typename Query, typename Workspace>
const Plan<Algo>& plan_for(int device, const Shape& x, const Shape& w, const Shape& y, const Conv2dOptions& o, DType dtype,
                           const char* what, bool deterministic_only, const Query& query, const Workspace& workspace) {
  return cached_plan<Algo>(plan_key(device, x, w, y, o, dtype), [&] {
    auto plan = std::make_unique<Plan<Algo>>(x, w, y, o, dtype);
    const Descriptors& d = plan->d;
    plan->algo = pick<Algo, Perf>(what, deterministic_only,
                                  [&](int n, int* returned, Perf* perf) { return query(d, n, returned, perf); });
    LOOM_CUDNN_CHECK(workspace(d, plan->algo, &plan->workspace_bytes));
    return plan;
  });
}

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y, const Conv2dOptions& o) {
  const int device = x.device().index;
  cudnnHandle_t handle = cuda::cudnn(device);
  const auto& p = plan_for<cudnnConvolutionFwdAlgo_t, cudnnConvolutionFwdAlgoPerf_t>(
      device, x.shape(), weight.shape(), y.shape(), o, x.dtype(), "forward", false,
      [&](const Descriptors& d, int n, int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
        return cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), n,
                                                      returned, perf);
      },
      [&](const Descriptors& d, cudnnConvolutionFwdAlgo_t algo, std::size_t* bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(handle, d.x.get(), d.w.get(), d.conv.get(), d.y.get(), algo,
                                                       bytes);
      });
  const Descriptors& d = p.d;
  const cudnn_util::Scalars s(x.dtype());
  Tensor scratch = cudnn_util::workspace(p.workspace_bytes, x.device());
  LOOM_CUDNN_CHECK(cudnnConvolutionForward(handle, s.one(), d.x.get(), x.raw_data(), d.w.get(), weight.raw_data(),
                                           d.conv.get(), p.algo, cudnn_util::data_or_null(scratch), p.workspace_bytes,
                                           s.zero(), d.y.get(), y.raw_data()));
  if (bias.defined()) {
    const TensorDescriptor b({1, bias.numel(), 1, 1}, x.dtype());
    LOOM_CUDNN_CHECK(cudnnAddTensor(handle, s.one(), b.get(), bias.raw_data(), s.one(), d.y.get(), y.raw_data()));
  }
}

void conv2d_backward_data(const Tensor& grad_y, const Tensor& weight, Tensor& grad_x, const Conv2dOptions& o) {
  const int device = grad_y.device().index;
  cudnnHandle_t handle = cuda::cudnn(device);
  const auto& p = plan_for<cudnnConvolutionBwdDataAlgo_t, cudnnConvolutionBwdDataAlgoPerf_t>(
      device, grad_x.shape(), weight.shape(), grad_y.shape(), o, grad_y.dtype(), "backward-data", true,
      [&](const Descriptors& d, int n, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(), n,
                                                           returned, perf);
      },
      [&](const Descriptors& d, cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d.w.get(), d.y.get(), d.conv.get(), d.x.get(),
                                                            algo, bytes);
      });
  const Descriptors& d = p.d;
  const cudnn_util::Scalars s(grad_y.dtype());
  Tensor scratch = cudnn_util::workspace(p.workspace_bytes, grad_y.device());
  LOOM_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, s.one(), d.w.get(), weight.raw_data(), d.y.get(),
                                                grad_y.raw_data(), d.conv.get(), p.algo,
                                                cudnn_util::data_or_null(scratch), p.workspace_bytes, s.zero(),
                                                d.x.get(), grad_x.raw_data()));
}

void conv2d_backward_filter(const Tensor& x, const Tensor& grad_y, Tensor& grad_weight, Tensor& grad_bias,
                            const Conv2dOptions& o) {
  const int device = x.device().index;
  cudnnHandle_t handle = cuda::cudnn(device);
  const auto& p = plan_for<cudnnConvolutionBwdFilterAlgo_t, cudnnConvolutionBwdFilterAlgoPerf_t>(
      device, x.shape(), grad_weight.shape(), grad_y.shape(), o, x.dtype(), "backward-filter", true,
      [&](const Descriptors& d, int n, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), n,
                                                             returned, perf);
      },
      [&](const Descriptors& d, cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d.x.get(), d.y.get(), d.conv.get(), d.w.get(),
                                                              algo, bytes);
      });
  const Descriptors& d = p.d;
  const cudnn_util::Scalars s(x.dtype());
  Tensor scratch = cudnn_util::workspace(p.workspace_bytes, x.device());
  // beta = 1: parameter gradients accumulate.
  LOOM_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, s.one(), d.x.get(), x.raw_data(), d.y.get(),
                                                  grad_y.raw_data(), d.conv.get(), p.algo,
                                                  cudnn_util::data_or_null(scratch), p.workspace_bytes, s.one(),
                                                  d.w.get(), grad_weight.raw_data()));
  if (grad_bias.defined()) {
    const TensorDescriptor b({1, grad_bias.numel(), 1, 1}, x.dtype());
    LOOM_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, s.one(), d.y.get(), grad_y.raw_data(), s.one(), b.get(),
                                                  grad_bias.raw_data()));
  }
}

}  // namespace loom::cuda_kernels
