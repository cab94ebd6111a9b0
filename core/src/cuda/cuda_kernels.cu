// Small CUDA kernels behind the dispatch seam: element-wise, bias, reductions, softmax, random.
// The per-element math (casts, Philox) is the same LOOM_HD code the CPU backend runs.
#include <cfloat>

#include <loom/core/cuda/block_reduce.cuh>
#include <loom/core/cuda/column_sums.cuh>
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/base/error.h>
#include <loom/core/dtype_dispatch.h>
#include <loom/core/half.h>
#include <loom/core/philox.h>

#include "backend.h"

namespace loom::cuda {

namespace {

constexpr unsigned int kThreads = 256;

__global__ void fill_kernel(void* out, DType dtype, long long n, double value) {
  LOOM_GRID_LOOP(i, n) store_element<double>(out, dtype, i, value);
}

__global__ void cast_kernel(const void* in, DType in_type, void* out, DType out_type, long long n) {
  LOOM_GRID_LOOP(i, n) {
    if (in_type == DType::i64 && out_type == DType::i64)
      static_cast<std::int64_t*>(out)[i] = static_cast<const std::int64_t*>(in)[i];
    else
      store_element<double>(out, out_type, i, load_element<double>(in, in_type, i));
  }
}

template <typename T>
__global__ void binary_kernel(char op, const T* a, const T* b, T* out, long long n) {
  LOOM_GRID_LOOP(i, n) out[i] = op == '+' ? a[i] + b[i] : (op == '-' ? a[i] - b[i] : a[i] * b[i]);
}

template <typename T>
__global__ void add_scaled_kernel(const T* a, T alpha, const T* b, T beta, T* out, long long n) {
  LOOM_GRID_LOOP(i, n) out[i] = alpha * a[i] + beta * b[i];
}

template <typename T>
__global__ void scale_kernel(T* x, T alpha, long long n) {
  LOOM_GRID_LOOP(i, n) x[i] *= alpha;
}

// The CPU's rounding functions (half.h), element by element: bf16 or f16 values in f32 storage.
__global__ void round_to_bf16_kernel(float* x, long long n) {
  LOOM_GRID_LOOP(i, n) x[i] = half::bf16_to_float(half::float_to_bf16(x[i]));
}
__global__ void round_to_f16_kernel(float* x, long long n) {
  LOOM_GRID_LOOP(i, n) x[i] = half::f16_to_float(half::float_to_f16(x[i]));
}

// Each block's sum of a*b in double (block_sum: an order fixed by the block size).
template <typename T>
__global__ void dot_kernel(const T* a, const T* b, long long n, double* block_sums) {
  double total = 0;
  LOOM_GRID_LOOP(i, n) total += static_cast<double>(a[i]) * b[i];
  total = block_sum(total);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

// *result (= 0 first unless `accumulate`) += the blocks' sums in block order (one thread: at most
// 1024 values).
__global__ void add_block_sums_kernel(const double* block_sums, unsigned int blocks, double* result, bool accumulate) {
  double total = accumulate ? *result : 0.0;
  for (unsigned int b = 0; b < blocks; ++b) total += block_sums[b];
  *result = total;
}

template <typename T>
__global__ void bias_add_kernel(T* x, const T* bias, long long n, long long width) {
  LOOM_GRID_LOOP(i, n) x[i] += bias[i % width];
}

// Element (row, column) of a rows x width gradient, for its column sums (column_sums.cuh).
template <typename T>
struct GradientElement {
  const T* grad;
  long long width;
  __device__ double operator()(long long row, long long column) const { return grad[row * width + column]; }
};

template <typename T>
__global__ void reduce_kernel(char op, const T* x, long long outer, long long length, long long inner, T* out,
                              std::int64_t* indices) {
  LOOM_GRID_LOOP(idx, outer * inner) {
    const long long o = idx / inner, i = idx % inner;
    const T* base = x + o * length * inner + i;
    if (op == 'M') {
      T best = base[0];
      long long at = 0;
      for (long long l = 1; l < length; ++l)
        if (base[l * inner] > best || (isnan(base[l * inner]) && !isnan(best))) {
          best = base[l * inner];
          at = l;
        }
      out[idx] = best;
      if (indices) indices[idx] = at;
    } else {
      double total = 0;
      for (long long l = 0; l < length; ++l) total += base[l * inner];
      out[idx] = static_cast<T>(op == 'm' ? total / static_cast<double>(length) : total);
    }
  }
}

// One block per row.
template <typename T>
__global__ void softmax_kernel(const T* x, T* y, long long n, bool log_output) {
  const T* xr = x + blockIdx.x * n;
  T* yr = y + blockIdx.x * n;
  T top = -INFINITY;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) top = max(top, xr[j]);
  top = block_max(top, T(-INFINITY));
  T total = 0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) total += exp(xr[j] - top);
  total = block_sum(total);
  for (long long j = threadIdx.x; j < n; j += blockDim.x)
    yr[j] = log_output ? xr[j] - top - log(total) : exp(xr[j] - top) / total;
}

template <typename T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, long long n) {
  const long long offset = blockIdx.x * n;
  T total = 0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) total += dy[offset + j] * y[offset + j];
  total = block_sum(total);
  for (long long j = threadIdx.x; j < n; j += blockDim.x) dx[offset + j] = y[offset + j] * (dy[offset + j] - total);
}

template <typename T>
__global__ void random_kernel(RandomKind kind, T* out, long long n, std::uint64_t seed, std::uint64_t key, float p0,
                              float p1, std::uint64_t first) {
  LOOM_GRID_LOOP(i, n) {
    const std::uint64_t index = first + static_cast<std::uint64_t>(i);
    if (kind == RandomKind::uniform)
      out[i] = static_cast<T>(philox::uniform(seed, key, index, p0, p1));
    else if (kind == RandomKind::normal)
      out[i] = static_cast<T>(philox::normal(seed, key, index, p0, p1));
    else
      out[i] = philox::bernoulli(seed, key, index, p0) ? T(1) : T(0);
  }
}

void check_launch() { LOOM_CUDA_CHECK(cudaGetLastError()); }

cudaStream_t stream_of(const Tensor& t) { return stream(t.device().index); }

}  // namespace

void fill(Tensor& out, double value) {
  const long long n = out.numel();
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), kThreads, 0, stream_of(out)>>>(out.raw_data(), out.dtype(), n, value);
  check_launch();
}

void cast(const Tensor& source, Tensor& out) {
  const long long n = source.numel();
  if (n == 0) return;
  cast_kernel<<<blocks_for(n), kThreads, 0, stream_of(out)>>>(source.raw_data(), source.dtype(), out.raw_data(),
                                                               out.dtype(), n);
  check_launch();
}

void binary(char op, const Tensor& a, const Tensor& b, Tensor& out) {
  const long long n = a.numel();
  if (n == 0) return;
  dispatch_floating(a.dtype(), "cuda::binary", [&]<typename T>(T) {
    binary_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(a)>>>(
        op, static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()),
        static_cast<T*>(out.raw_data()), n);
  });
  check_launch();
}

void add_scaled(const Tensor& a, double alpha, const Tensor& b, double beta, Tensor& out) {
  const long long n = a.numel();
  if (n == 0) return;
  dispatch_floating(a.dtype(), "cuda::add_scaled", [&]<typename T>(T) {
    add_scaled_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(a)>>>(
        static_cast<const T*>(a.raw_data()), static_cast<T>(alpha),
        static_cast<const T*>(b.raw_data()), static_cast<T>(beta),
        static_cast<T*>(out.raw_data()), n);
  });
  check_launch();
}

void scale(Tensor& x, double alpha) {
  const long long n = x.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "cuda::scale", [&]<typename T>(T) {
    scale_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(x.raw_data()), static_cast<T>(alpha), n);
  });
  check_launch();
}

void round_to(Tensor& x, DType storage) {
  const long long n = x.numel();
  if (n == 0) return;
  auto* kernel = storage == DType::bf16 ? round_to_bf16_kernel : round_to_f16_kernel;
  kernel<<<blocks_for(n), kThreads, 0, stream_of(x)>>>(static_cast<float*>(x.raw_data()), n);
  check_launch();
}

namespace {

// Queues *result (+)= sum of a*b over many blocks (one block left most of the GPU idle), then their
// sums in block order: the grid depends only on n, so the result is the same run to run.
void queue_dot(const Tensor& a, const Tensor& b, double* result, bool accumulate) {
  MemoryCategoryScope scope(MemoryCategory::workspace);
  const unsigned int blocks = std::min(blocks_for(a.numel(), kThreads), 1024u);
  Tensor block_sums = Tensor::empty({blocks}, DType::f64, a.device());  // reused only after these kernels: one stream
  dispatch_floating(a.dtype(), "cuda::dot", [&]<typename T>(T) {
    dot_kernel<T><<<blocks, kThreads, 0, stream_of(a)>>>(
        static_cast<const T*>(a.raw_data()), static_cast<const T*>(b.raw_data()),
        a.numel(), block_sums.data<double>());
  });
  add_block_sums_kernel<<<1, 1, 0, stream_of(a)>>>(block_sums.data<double>(), blocks, result, accumulate);
  check_launch();
}

}  // namespace

double dot(const Tensor& a, const Tensor& b) {
  MemoryCategoryScope scope(MemoryCategory::workspace);
  Tensor result = Tensor::empty({1}, DType::f64, a.device());
  queue_dot(a, b, result.data<double>(), false);
  return result.item();
}

void add_dot(const Tensor& a, const Tensor& b, Tensor& total) { queue_dot(a, b, total.data<double>(), true); }

void bias_add(Tensor& x, const Tensor& bias) {
  const long long n = x.numel(), width = bias.numel();
  if (n == 0) return;
  dispatch_floating(x.dtype(), "cuda::bias_add", [&]<typename T>(T) {
    bias_add_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
        static_cast<T*>(x.raw_data()), static_cast<const T*>(bias.raw_data()), n, width);
  });
  check_launch();
}

void bias_grad(const Tensor& grad, Tensor& grad_bias) {
  const long long width = grad_bias.numel();
  if (width == 0) return;
  const long long rows = grad.numel() / width;
  dispatch_floating(grad.dtype(), "cuda::bias_grad", [&]<typename T>(T) {
    add_column_sums(GradientElement<T>{static_cast<const T*>(grad.raw_data()), width}, rows, width,
                    static_cast<T*>(grad_bias.raw_data()), grad.device(), stream_of(grad));
  });
}

void reduce(char op, const Tensor& x, std::int64_t outer, std::int64_t length, std::int64_t inner, Tensor& out,
            Tensor* indices) {
  const long long n = outer * inner;
  if (n == 0) return;
  std::int64_t* idx = indices ? static_cast<std::int64_t*>(indices->raw_data()) : nullptr;
  dispatch_floating(x.dtype(), "cuda::bias_grad", [&]<typename T>(T) {
    reduce_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(x)>>>(
        op, static_cast<const T*>(x.raw_data()), outer, length, inner,
        static_cast<T*>(out.raw_data()), idx);
  });
  check_launch();
}

void softmax(const Tensor& x, Tensor& out, bool log) {
  const long long n = x.size(-1), rows = n ? x.numel() / n : 0;
  if (rows == 0) return;
  dispatch_floating(x.dtype(), "cuda::softmax", [&]<typename T>(T) {
    softmax_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream_of(x)>>>(
        static_cast<const T*>(x.raw_data()), static_cast<T*>(out.raw_data()), n, log);
  });
  check_launch();
}

void softmax_backward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x) {
  const long long n = y.size(-1), rows = n ? y.numel() / n : 0;
  if (rows == 0) return;
  dispatch_floating(y.dtype(), "cuda::softmax_backward", [&]<typename T>(T) {
    softmax_backward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream_of(y)>>>(
        static_cast<const T*>(y.raw_data()), static_cast<const T*>(grad_y.raw_data()),
        static_cast<T*>(grad_x.raw_data()), n);
  });
  check_launch();
}

void random(RandomKind kind, Tensor& out, std::uint64_t seed, std::uint64_t key, double p0, double p1,
            std::uint64_t first_index) {
  const long long n = out.numel();
  if (n == 0) return;
  dispatch_floating(out.dtype(), "cuda::softmax_backward", [&]<typename T>(T) {
    random_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(out)>>>(
        kind, static_cast<T*>(out.raw_data()), n, seed, key, static_cast<float>(p0),
        static_cast<float>(p1), first_index);
  });
  check_launch();
}

}  // namespace loom::cuda
