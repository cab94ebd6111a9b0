// CUDA kernels of the additive attention scores (cuda/bahdanau_attention.cu); see
// bahdanau_attention.cpp for the CPU versions and the math.
#pragma once

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

// probs [N, Tq, Tk] = masked softmax_j(v^ . tanh(pq[n, i] + pk[n, j] + b)); padding: [N, Tk] in the
// dtype of pq (non-zero = padded) or undefined.
LOOM_CUDA_KERNEL(void additive_attention_probs(const Tensor& pq, const Tensor& pk, const Tensor& bias,
                                               const Tensor& v_hat, const Tensor& padding, Tensor& probs))
// From the score gradients [N, Tq, Tk]: grad_pq, grad_pk, grad_v_hat [U] and grad_bias [U], all written.
LOOM_CUDA_KERNEL(void additive_attention_backward(const Tensor& pq, const Tensor& pk, const Tensor& bias,
                                                  const Tensor& v_hat, const Tensor& grad_scores, Tensor& grad_pq,
                                                  Tensor& grad_pk, Tensor& grad_v_hat, Tensor& grad_bias))

}  // namespace loom::cuda_kernels
