// LSTM cell kernels (cuda/lstm.h): one thread per (row, unit), the math of lstm_cell.h that the
// CPU's f64 path runs too.
#include "cuda/lstm.h"

#include <loom/core/cuda/context.h>
#include <loom/core/cuda/grid_loop.cuh>
#include <loom/core/dtype_dispatch.h>

#include "lstm_cell.h"

namespace loom::cuda_kernels {

namespace {

template <typename T>
__global__ void cell_forward_kernel(long long rows, long long hidden, T* gates, const T* bias, const T* c_prev, T* c,
                                    T* h) {
  LOOM_GRID_LOOP(k, rows * hidden) {
    const long long n = k / hidden, j = k % hidden;
    lstm_cell::forward<T>(j, hidden, gates + n * 4 * hidden, bias, c_prev ? c_prev[k] : T(0), c + n * hidden,
                          h + n * hidden);
  }
}

template <typename T>
__global__ void cell_backward_kernel(long long rows, long long hidden, const T* gates, const T* c, const T* c_prev,
                                     const T* grad_h, long long grad_h_pitch, const T* grad_h_recurrent, T* grad_c,
                                     T* grad_gates) {
  LOOM_GRID_LOOP(k, rows * hidden) {
    const long long n = k / hidden, j = k % hidden;
    const T dh = grad_h_recurrent[k] + (grad_h ? grad_h[n * grad_h_pitch + j] : T(0));
    grad_c[k] = lstm_cell::backward<T>(j, hidden, gates + n * 4 * hidden, c[k], c_prev ? c_prev[k] : T(0), dh,
                                       grad_c[k], grad_gates + n * 4 * hidden);
  }
}

template <typename T>
void forward_typed(int device, long long rows, long long hidden, void* gates, const void* bias, const void* c_prev,
                   void* c, void* h) {
  cell_forward_kernel<T><<<cuda::blocks_for(rows * hidden), 256, 0, cuda::stream(device)>>>(
      rows, hidden, static_cast<T*>(gates), static_cast<const T*>(bias), static_cast<const T*>(c_prev),
      static_cast<T*>(c), static_cast<T*>(h));
  LOOM_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void backward_typed(int device, long long rows, long long hidden, const void* gates, const void* c,
                    const void* c_prev, const void* grad_h, long long grad_h_pitch, const void* grad_h_recurrent,
                    void* grad_c, void* grad_gates) {
  cell_backward_kernel<T><<<cuda::blocks_for(rows * hidden), 256, 0, cuda::stream(device)>>>(
      rows, hidden, static_cast<const T*>(gates), static_cast<const T*>(c), static_cast<const T*>(c_prev),
      static_cast<const T*>(grad_h), grad_h_pitch, static_cast<const T*>(grad_h_recurrent), static_cast<T*>(grad_c),
      static_cast<T*>(grad_gates));
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void lstm_cell_forward(DType dtype, int device, std::int64_t rows, std::int64_t hidden, void* gates, const void* bias,
                       const void* c_prev, void* c, void* h) {
  dispatch_floating(dtype, "cuda::lstm_cell_forward", [&]<typename T>(T) {
    forward_typed<T>(device, rows, hidden, gates, bias, c_prev, c, h);
  });
}

void lstm_cell_backward(DType dtype, int device, std::int64_t rows, std::int64_t hidden, const void* gates,
                        const void* c, const void* c_prev, const void* grad_h, std::int64_t grad_h_pitch,
                        const void* grad_h_recurrent, void* grad_c, void* grad_gates) {
  dispatch_floating(dtype, "cuda::lstm_cell_backward", [&]<typename T>(T) {
    backward_typed<T>(device, rows, hidden, gates, c, c_prev, grad_h, grad_h_pitch, grad_h_recurrent, grad_c,
                      grad_gates);
  });
}

}  // namespace loom::cuda_kernels
