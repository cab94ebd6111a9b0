// CUDA kernels of the LSTM cell (cuda/lstm.cu); the GEMMs go through loom::ops (cuBLAS).
// Pointers are device pointers of `dtype` (f32 or f64); rows = batch, hidden = H.
#pragma once

#include <cstdint>

#include "cuda/kernels.h"

namespace loom::cuda_kernels {

// See lstm_cell::forward; c_prev may be null (zero state).
LOOM_CUDA_KERNEL(void lstm_cell_forward(DType dtype, int device, std::int64_t rows, std::int64_t hidden, void* gates,
                                        const void* bias, const void* c_prev, void* c, void* h))
// See lstm_cell::backward. grad_h may be null (no gradient from the output at this step), its rows
// `grad_h_pitch` apart; grad_h_recurrent [rows, H]; grad_c [rows, H] is read and overwritten with
// the gradient for c_{t-1}; c_prev may be null (zero state).
LOOM_CUDA_KERNEL(void lstm_cell_backward(DType dtype, int device, std::int64_t rows, std::int64_t hidden,
                                         const void* gates, const void* c, const void* c_prev, const void* grad_h,
                                         std::int64_t grad_h_pitch, const void* grad_h_recurrent, void* grad_c,
                                         void* grad_gates))

}  // namespace loom::cuda_kernels
