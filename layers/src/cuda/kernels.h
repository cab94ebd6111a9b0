// Declarations of the small CUDA kernels in layers/src/cuda/<layer>.cu, one group per file (layers
// with a larger CUDA part declare it in their own cuda/<layer>.h, which includes this). In a
// build without CUDA they become stubs that throw: a CUDA tensor cannot exist there, so they are
// never reached, but the CPU code that dispatches on the device compiles and links unchanged.
#pragma once

#include <cstdint>

#include <loom/base/error.h>
#include <loom/core/tensor.h>

#ifdef LOOM_WITH_CUDA
#define LOOM_CUDA_KERNEL(declaration) declaration;
#else  // a stub ignores its parameters: the warning is off for it alone
#define LOOM_CUDA_KERNEL(declaration)                                                      \
  _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wunused-parameter\"") \
  [[noreturn]] inline declaration { LOOM_THROW("this build of loom has no CUDA backend"); } \
  _Pragma("GCC diagnostic pop")
#endif

namespace loom::cuda_kernels {

// cuda/activation.cu — kind is activation_math::Kind; saved is x (GELU) or y (the others).
LOOM_CUDA_KERNEL(void activation_forward(int kind, const Tensor& x, Tensor& y))
LOOM_CUDA_KERNEL(void activation_backward(int kind, const Tensor& saved, const Tensor& grad_y, Tensor& grad_x))

// cuda/embedding.cu — ids i64 or i32; grad_weight accumulates (atomics), skipping padding_idx.
LOOM_CUDA_KERNEL(void embedding_forward(const Tensor& ids, const Tensor& table, Tensor& y))
LOOM_CUDA_KERNEL(void embedding_backward(const Tensor& ids, const Tensor& grad_y, std::int64_t padding_idx,
                                         Tensor& grad_weight))

// cuda/layer_norm.cu — gamma/beta (and their grads) undefined without affine; param grads accumulate.
LOOM_CUDA_KERNEL(void layer_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps,
                                         Tensor& y, Tensor& mean, Tensor& rstd))
LOOM_CUDA_KERNEL(void layer_norm_backward(const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                          const Tensor& rstd, const Tensor& grad_y, Tensor& grad_x,
                                          Tensor grad_gamma, Tensor grad_beta))

// cuda/loss.cu — cross-entropy from log-probabilities [rows, C].
// Both stay on the device (the host waits for neither): loss (a scalar of log_probs' dtype) =
// the sum of the row losses / denominator; the gradient's scale is grad_loss (the loss's gradient,
// a scalar of that dtype on the device) / denominator.
LOOM_CUDA_KERNEL(void cross_entropy_loss(const Tensor& log_probs, const Tensor& targets, std::int64_t ignore_index,
                                         double smoothing, double denominator, Tensor& loss))
LOOM_CUDA_KERNEL(void cross_entropy_backward(const Tensor& log_probs, const Tensor& targets,
                                             std::int64_t ignore_index, double smoothing, const Tensor& grad_loss,
                                             double denominator, Tensor& grad_logits))

// cuda/attention.cu — heads [B*H, T, D] <-> columns [offset, offset + H*D) of packed [B, T, W];
// masked_softmax in place over scores [B*H, T, S] (key_padding [B, S] in the scores' dtype or undefined).
LOOM_CUDA_KERNEL(void split_heads(const Tensor& packed, std::int64_t offset, std::int64_t heads, Tensor& out))
LOOM_CUDA_KERNEL(void merge_heads(const Tensor& heads_tensor, std::int64_t offset, std::int64_t heads, Tensor& packed))
LOOM_CUDA_KERNEL(void masked_softmax(Tensor& scores, const Tensor& key_padding, std::int64_t batch,
                                     std::int64_t heads, bool causal))
// cuda/dropout.cu — out = x * keep / (1 - p) from the Bernoulli(keep) stream at first_index + i.
LOOM_CUDA_KERNEL(void dropout_apply(const Tensor& x, Tensor& out, std::uint64_t seed, std::uint64_t key,
                                    std::uint64_t first_index, float keep, double scale))
}  // namespace loom::cuda_kernels
