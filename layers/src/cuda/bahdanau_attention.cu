// Additive attention score kernels (cuda/bahdanau_attention.h). Straightforward parallelisation
// over independent outputs; tanh is recomputed instead of stored, as on the CPU.
#include "cuda/bahdanau_attention.h"

#include <loom/core/cuda/block_reduce.cuh>
#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>

namespace loom::cuda_kernels {

namespace {

constexpr unsigned int kThreads = 256;

struct Sizes {
  long long batch, queries, keys, units;
};

// scores[n, i, j] (padded keys: -inf).
template <typename T>
__global__ void scores_kernel(Sizes s, const T* pq, const T* pk, const T* bias, const T* v_hat, const T* padding,
                              T* scores) {
  LOOM_GRID_LOOP(k, s.batch * s.queries * s.keys) {
    const long long j = k % s.keys, ni = k / s.keys, n = ni / s.queries;
    if (padding && padding[n * s.keys + j] != T(0)) {
      scores[k] = -INFINITY;
      continue;
    }
    const T* q = pq + ni * s.units;
    const T* key = pk + (n * s.keys + j) * s.units;
    T total = 0;
    for (long long u = 0; u < s.units; ++u) total += v_hat[u] * tanh(q[u] + key[u] + bias[u]);
    scores[k] = total;
  }
}

// Row softmax in place; a row whose keys are all padded becomes zeros.
template <typename T>
__global__ void softmax_rows_kernel(Sizes s, T* probs) {
  LOOM_GRID_LOOP(row, s.batch * s.queries) {
    T* p = probs + row * s.keys;
    T largest = -INFINITY;
    for (long long j = 0; j < s.keys; ++j) largest = p[j] > largest ? p[j] : largest;
    if (largest == -INFINITY) {
      for (long long j = 0; j < s.keys; ++j) p[j] = 0;
      continue;
    }
    T total = 0;
    for (long long j = 0; j < s.keys; ++j) total += p[j] = exp(p[j] - largest);
    for (long long j = 0; j < s.keys; ++j) p[j] /= total;
  }
}

// grad_pq[n, i, u] (by_query) or grad_pk[n, j, u]: the sum over the other sequence of
// ds * v^[u] * (1 - tanh^2).
template <typename T, bool kByQuery>
__global__ void projection_grad_kernel(Sizes s, const T* pq, const T* pk, const T* bias, const T* v_hat,
                                       const T* grad_scores, T* out) {
  const long long rows = kByQuery ? s.queries : s.keys, others = kByQuery ? s.keys : s.queries;
  LOOM_GRID_LOOP(k, s.batch * rows * s.units) {
    const long long u = k % s.units, r = (k / s.units) % rows, n = k / (s.units * rows);
    T total = 0;
    for (long long o = 0; o < others; ++o) {
      const long long i = kByQuery ? r : o, j = kByQuery ? o : r;
      const T ds = grad_scores[(n * s.queries + i) * s.keys + j];
      if (ds == T(0)) continue;
      const T t = tanh(pq[(n * s.queries + i) * s.units + u] + pk[(n * s.keys + j) * s.units + u] + bias[u]);
      total += ds * v_hat[u] * (T(1) - t * t);
    }
    out[k] = total;
  }
}

// One block per unit u: grad_v_hat[u] = sum ds * tanh(...), grad_bias[u] = sum over (n, i) of grad_pq.
template <typename T>
__global__ void vector_grads_kernel(Sizes s, const T* pq, const T* pk, const T* bias, const T* grad_scores,
                                    const T* grad_pq, T* grad_v_hat, T* grad_bias) {
  const long long u = blockIdx.x;
  double v_sum = 0, b_sum = 0;
  for (long long k = threadIdx.x; k < s.batch * s.queries * s.keys; k += blockDim.x) {
    const T ds = grad_scores[k];
    if (ds == T(0)) continue;
    const long long j = k % s.keys, ni = k / s.keys, n = ni / s.queries;
    v_sum += ds * tanh(pq[ni * s.units + u] + pk[(n * s.keys + j) * s.units + u] + bias[u]);
  }
  for (long long ni = threadIdx.x; ni < s.batch * s.queries; ni += blockDim.x) b_sum += grad_pq[ni * s.units + u];
  v_sum = cuda::block_sum(v_sum);
  b_sum = cuda::block_sum(b_sum);
  if (threadIdx.x == 0) {
    grad_v_hat[u] = static_cast<T>(v_sum);
    grad_bias[u] = static_cast<T>(b_sum);
  }
}

Sizes sizes_of(const Tensor& pq, const Tensor& pk) { return {pq.size(0), pq.size(1), pk.size(1), pq.size(2)}; }

template <typename T>
void probs_typed(const Tensor& pq, const Tensor& pk, const Tensor& bias, const Tensor& v_hat, const Tensor& padding,
                 Tensor& probs) {
  const Sizes s = sizes_of(pq, pk);
  cudaStream_t stream = cuda::stream(pq.device().index);
  scores_kernel<T><<<cuda::blocks_for(s.batch * s.queries * s.keys), kThreads, 0, stream>>>(
      s, pq.data<T>(), pk.data<T>(), bias.data<T>(), v_hat.data<T>(), padding.defined() ? padding.data<T>() : nullptr,
      probs.data<T>());
  softmax_rows_kernel<T><<<cuda::blocks_for(s.batch * s.queries), kThreads, 0, stream>>>(s, probs.data<T>());
  LOOM_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void backward_typed(const Tensor& pq, const Tensor& pk, const Tensor& bias, const Tensor& v_hat,
                    const Tensor& grad_scores, Tensor& grad_pq, Tensor& grad_pk, Tensor& grad_v_hat,
                    Tensor& grad_bias) {
  const Sizes s = sizes_of(pq, pk);
  cudaStream_t stream = cuda::stream(pq.device().index);
  projection_grad_kernel<T, true><<<cuda::blocks_for(s.batch * s.queries * s.units), kThreads, 0, stream>>>(
      s, pq.data<T>(), pk.data<T>(), bias.data<T>(), v_hat.data<T>(), grad_scores.data<T>(), grad_pq.data<T>());
  projection_grad_kernel<T, false><<<cuda::blocks_for(s.batch * s.keys * s.units), kThreads, 0, stream>>>(
      s, pq.data<T>(), pk.data<T>(), bias.data<T>(), v_hat.data<T>(), grad_scores.data<T>(), grad_pk.data<T>());
  vector_grads_kernel<T><<<static_cast<unsigned int>(s.units), kThreads, 0, stream>>>(
      s, pq.data<T>(), pk.data<T>(), bias.data<T>(), grad_scores.data<T>(), grad_pq.data<T>(), grad_v_hat.data<T>(),
      grad_bias.data<T>());
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void additive_attention_probs(const Tensor& pq, const Tensor& pk, const Tensor& bias, const Tensor& v_hat,
                              const Tensor& padding, Tensor& probs) {
  dispatch_floating(pq.dtype(), "cuda::additive_attention_probs", [&]<typename T>(T) {
    probs_typed<T>(pq, pk, bias, v_hat, padding, probs);
  });
}

void additive_attention_backward(const Tensor& pq, const Tensor& pk, const Tensor& bias, const Tensor& v_hat,
                                 const Tensor& grad_scores, Tensor& grad_pq, Tensor& grad_pk, Tensor& grad_v_hat,
                                 Tensor& grad_bias) {
  dispatch_floating(pq.dtype(), "cuda::additive_attention_backward", [&]<typename T>(T) {
    backward_typed<T>(pq, pk, bias, v_hat, grad_scores, grad_pq, grad_pk, grad_v_hat, grad_bias);
  });
}

}  // namespace loom::cuda_kernels
