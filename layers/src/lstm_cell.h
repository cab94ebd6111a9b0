// The LSTM cell's element-wise math, written once for the CPU loops (lstm.cpp) and the CUDA
// kernels (cuda/lstm.cu). One element is (row n, unit j) of a step; the four gate blocks of a
// row sit at j, H + j, 2H + j, 3H + j in PyTorch's order i, f, g, o.
#pragma once

#include <cmath>
#include <cstdint>

#include <loom/core/hostdevice.h>

namespace loom::lstm_cell {

template <typename T>
LOOM_HD T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}

// gates (row of 4H) holds pre-activations on entry (input and recurrent projections, without
// bias) and the activations i, f, g, o on exit; c and h of this step are written.
template <typename T>
LOOM_HD void forward(std::int64_t j, std::int64_t hidden, T* gates, const T* bias, T c_prev, T* c, T* h) {
  const T i = sigmoid(gates[j] + bias[j]);
  const T f = sigmoid(gates[hidden + j] + bias[hidden + j]);
  const T g = tanh(gates[2 * hidden + j] + bias[2 * hidden + j]);
  const T o = sigmoid(gates[3 * hidden + j] + bias[3 * hidden + j]);
  gates[j] = i;
  gates[hidden + j] = f;
  gates[2 * hidden + j] = g;
  gates[3 * hidden + j] = o;
  const T cell = f * c_prev + i * g;
  c[j] = cell;
  h[j] = o * tanh(cell);
}

// From the saved activations of a step, the gradient dh reaching h_t and dc reaching c_t from
// the future: writes the pre-activation gradients (row of 4H) and returns dc for c_{t-1}.
template <typename T>
LOOM_HD T backward(std::int64_t j, std::int64_t hidden, const T* gates, T c, T c_prev, T dh, T dc, T* grad_gates) {
  const T i = gates[j], f = gates[hidden + j], g = gates[2 * hidden + j], o = gates[3 * hidden + j];
  const T tanh_c = tanh(c);
  const T dcell = dc + dh * o * (T(1) - tanh_c * tanh_c);
  grad_gates[j] = dcell * g * i * (T(1) - i);
  grad_gates[hidden + j] = dcell * c_prev * f * (T(1) - f);
  grad_gates[2 * hidden + j] = dcell * i * (T(1) - g * g);
  grad_gates[3 * hidden + j] = dh * tanh_c * o * (T(1) - o);
  return dcell * f;
}

}  // namespace loom::lstm_cell
