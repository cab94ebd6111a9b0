// LSTM forward/backward (see lstm.h). The sequence work is shared by CPU and CUDA: GEMMs go
// through loom::ops, the fused cell runs here on the CPU (Eigen-vectorised in f32, the shared
// lstm_cell.h math in f64) or in cuda/lstm.cu.
#include <loom/layers/lstm.h>

#include <cmath>
#include <string>
#include <type_traits>

// GCC 12 reports Eigen's AVX-512 tanh/logistic packets as maybe-uninitialized (a false positive
// inside the intrinsics headers, reached through inlining).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/parallel.h>

#include "layer_util.h"
#include "lstm_cell.h"
#include "cuda/lstm.h"
#include "strided_copy.h"

namespace loom {

namespace {

// Step t of a [T, N, F] sequence as an [N, F] matrix (a view).
Tensor step(const Tensor& sequence, std::int64_t t) {
  return sequence.slice(t, t + 1).reshape({sequence.size(1), sequence.size(2)});
}

// Steps [begin, end) of a [T, N, F] sequence as a [(end - begin) * N, F] matrix (a view).
Tensor steps(const Tensor& sequence, std::int64_t begin, std::int64_t end) {
  return sequence.slice(begin, end).reshape({(end - begin) * sequence.size(1), sequence.size(2)});
}

Tensor as_rows(const Tensor& sequence) { return steps(sequence, 0, sequence.size(0)); }

template <typename T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <typename T>
void cell_forward_cpu(std::int64_t rows, std::int64_t hidden, T* gates, const T* bias, const T* c_prev, T* c, T* h) {
  const std::int64_t H = hidden;
  if constexpr (std::is_same_v<T, float>) {
    const ConstRow<T> bi(bias, H), bf(bias + H, H), bg(bias + 2 * H, H), bo(bias + 3 * H, H);
    parallel_for(rows, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t n = begin; n < end; ++n) {
      T* g = gates + n * 4 * H;
      Row<T> i(g, H), f(g + H, H), cand(g + 2 * H, H), o(g + 3 * H, H);
      i = (i + bi).logistic();
      f = (f + bf).logistic();
      cand = (cand + bg).tanh();
      o = (o + bo).logistic();
      Row<T> cell(c + n * H, H), out(h + n * H, H);
      if (c_prev)
        cell = f * ConstRow<T>(c_prev + n * H, H) + i * cand;
      else
        cell = i * cand;
      out = o * cell.tanh();
    }
    });
  } else {
    for (std::int64_t n = 0; n < rows; ++n)
      for (std::int64_t j = 0; j < H; ++j)
        lstm_cell::forward<T>(j, H, gates + n * 4 * H, bias, c_prev ? c_prev[n * H + j] : T(0), c + n * H, h + n * H);
  }
}

template <typename T>
void cell_backward_cpu(std::int64_t rows, std::int64_t hidden, const T* gates, const T* c, const T* c_prev,
                       const T* grad_h, std::int64_t grad_h_pitch, const T* grad_h_recurrent, T* grad_c,
                       T* grad_gates) {
  const std::int64_t H = hidden;
  if constexpr (std::is_same_v<T, float>) {
    parallel_for(rows, 1, [&](std::int64_t begin, std::int64_t end) {
    Eigen::Array<T, Eigen::Dynamic, 1> tanh_c(H), dh(H), dcell(H);
    for (std::int64_t n = begin; n < end; ++n) {
      const T* g = gates + n * 4 * H;
      const ConstRow<T> i(g, H), f(g + H, H), cand(g + 2 * H, H), o(g + 3 * H, H);
      T* dg = grad_gates + n * 4 * H;
      Row<T> di(dg, H), df(dg + H, H), dcand(dg + 2 * H, H), d_o(dg + 3 * H, H);
      Row<T> dc(grad_c + n * H, H);
      dh = ConstRow<T>(grad_h_recurrent + n * H, H);
      if (grad_h) dh += ConstRow<T>(grad_h + n * grad_h_pitch, H);
      tanh_c = ConstRow<T>(c + n * H, H).tanh();
      dcell = dc + dh * o * (T(1) - tanh_c * tanh_c);
      di = dcell * cand * i * (T(1) - i);
      if (c_prev)
        df = dcell * ConstRow<T>(c_prev + n * H, H) * f * (T(1) - f);
      else
        df.setZero();
      dcand = dcell * i * (T(1) - cand * cand);
      d_o = dh * tanh_c * o * (T(1) - o);
      dc = dcell * f;
    }
    });
  } else {
    for (std::int64_t n = 0; n < rows; ++n)
      for (std::int64_t j = 0; j < H; ++j) {
        const T dh = grad_h_recurrent[n * H + j] + (grad_h ? grad_h[n * grad_h_pitch + j] : T(0));
        grad_c[n * H + j] = lstm_cell::backward<T>(j, H, gates + n * 4 * H, c[n * H + j],
                                                   c_prev ? c_prev[n * H + j] : T(0), dh, grad_c[n * H + j],
                                                   grad_gates + n * 4 * H);
      }
  }
}

const void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

// Fused cell of one step on the tensors' device; c_prev may be undefined (zero state).
void cell_forward(Tensor& gates, const Tensor& bias, const Tensor& c_prev, Tensor& c, Tensor& h,
                  const std::string& where) {
  const std::int64_t rows = gates.size(0), hidden = c.size(1);
  if (gates.device().is_cuda()) {
    cuda_kernels::lstm_cell_forward(gates.dtype(), gates.device().index, rows, hidden, gates.raw_data(),
                                    bias.raw_data(), data_or_null(c_prev), c.raw_data(), h.raw_data());
    return;
  }
  dispatch_floating(gates.dtype(), where, [&]<typename T>(T) {
    cell_forward_cpu<T>(rows, hidden, gates.data<T>(), bias.data<T>(),
                        c_prev.defined() ? c_prev.data<T>() : nullptr, c.data<T>(), h.data<T>());
  });
}

// grad_h: rows of the output gradient for this step, `grad_h_pitch` apart, starting `grad_h_offset`
// elements into `grad_output` (undefined: no gradient from the output).
void cell_backward(const Tensor& gates, const Tensor& c, const Tensor& c_prev, const Tensor& grad_output,
                   std::int64_t grad_h_offset, std::int64_t grad_h_pitch, const Tensor& grad_h_recurrent,
                   Tensor& grad_c, Tensor& grad_gates, const std::string& where) {
  const std::int64_t rows = gates.size(0), hidden = c.size(1);
  const std::size_t element = gates.element_size();
  const void* grad_h = grad_output.defined()
                           ? static_cast<const char*>(grad_output.raw_data()) + grad_h_offset * element
                           : nullptr;
  if (gates.device().is_cuda()) {
    cuda_kernels::lstm_cell_backward(gates.dtype(), gates.device().index, rows, hidden, gates.raw_data(), c.raw_data(),
                                     data_or_null(c_prev), grad_h, grad_h_pitch, grad_h_recurrent.raw_data(),
                                     grad_c.raw_data(), grad_gates.raw_data());
    return;
  }
  dispatch_floating(gates.dtype(), where, [&]<typename T>(T) {
    cell_backward_cpu<T>(rows, hidden, gates.data<T>(), c.data<T>(), c_prev.defined() ? c_prev.data<T>() : nullptr,
                         static_cast<const T*>(grad_h), grad_h_pitch, grad_h_recurrent.data<T>(), grad_c.data<T>(),
                         grad_gates.data<T>());
  });
}

// Slot `slot` of an [N, S, H] state as a new contiguous [N, H] tensor.
Tensor state_slot(const Tensor& states, std::int64_t slot) {
  const std::int64_t rows = states.size(0), slots = states.size(1), hidden = states.size(2);
  Tensor out = Tensor::empty({rows, hidden}, states.dtype(), states.device());
  detail::copy_rows(states, slot * hidden, slots * hidden, out, 0, hidden, rows, hidden);
  return out;
}

// states[:, slot, :] = value ([N, H]).
void set_state_slot(Tensor& states, std::int64_t slot, const Tensor& value) {
  const std::int64_t rows = states.size(0), slots = states.size(1), hidden = states.size(2);
  detail::copy_rows(value, 0, hidden, states, slot * hidden, slots * hidden, rows, hidden);
}

}  // namespace

LSTM::LSTM(const LstmOptions& options) : options_(options) {
  const auto& o = options_;
  LOOM_CHECK(o.input_size > 0 && o.hidden_size > 0 && o.num_layers > 0, "LSTM: input_size ", o.input_size,
             ", hidden_size ", o.hidden_size, " and num_layers ", o.num_layers, " must be positive");
  const std::int64_t H = o.hidden_size;
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  const Init init = Init::uniform(-bound, bound);
  directions_.reserve(static_cast<std::size_t>(o.num_layers + 1));
  for (std::int64_t layer = 0; layer < o.num_layers; ++layer) {
    const std::int64_t input = layer == 0 ? o.input_size : directions_of(layer - 1) * H;
    for (std::int64_t d = 0; d < directions_of(layer); ++d) {
      Direction& dir = directions_.emplace_back();
      dir.layer = layer;
      dir.reverse = d == 1;
      dir.slot = layer == 0 ? d : layer + (o.bidirectional_first ? 1 : 0);
      dir.input_size = input;
      const std::string suffix = detail::concat("_l", layer, dir.reverse ? "_reverse" : "");
      dir.weight_ih = make_parameter("weight_ih" + suffix, {4 * H, input}, init);
      dir.weight_hh = make_parameter("weight_hh" + suffix, {4 * H, H}, init);
      dir.bias_ih = make_parameter("bias_ih" + suffix, {4 * H}, init);
      dir.bias_hh = make_parameter("bias_hh" + suffix, {4 * H}, init);
      dir.key = detail::concat("l", layer, dir.reverse ? ".r" : ".f");
    }
  }
}

std::int64_t LSTM::directions_of(std::int64_t layer) const {
  return layer == 0 && options_.bidirectional_first ? 2 : 1;
}

std::int64_t LSTM::state_slots() const { return options_.num_layers + (options_.bidirectional_first ? 1 : 0); }

std::int64_t LSTM::output_size() const { return directions_of(options_.num_layers - 1) * options_.hidden_size; }

std::vector<Parameter*> LSTM::local_parameters() {
  std::vector<Parameter*> out;
  for (Direction& dir : directions_)
    for (Parameter* p : {&dir.weight_ih, &dir.weight_hh, &dir.bias_ih, &dir.bias_hh}) out.push_back(p);
  return out;
}

void LSTM::run_direction(const Direction& dir, const Tensor& input, const Tensor& h0, const Tensor& c0,
                         Context& ctx) {
  const std::int64_t T = input.size(0), N = input.size(1), H = options_.hidden_size;
  Tensor gates = Tensor::empty({T, N, 4 * H}, input.dtype(), input.device());
  Tensor c = Tensor::empty({T, N, H}, input.dtype(), input.device());
  Tensor h = Tensor::empty({T, N, H}, input.dtype(), input.device());
  Tensor gate_rows = as_rows(gates);
  ops::gemm(as_rows(input), false, dir.weight_ih.value, true, gate_rows);
  Tensor bias;
  {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    bias = Tensor::empty({4 * H}, input.dtype(), input.device());
    ops::add(dir.bias_ih.value, dir.bias_hh.value, bias);
  }
  const ops::RepeatedGemm recurrent(dir.weight_hh.value, true, N, 1.0);  // gates_t += h_prev W_hh^T
  for (std::int64_t s = 0; s < T; ++s) {
    const std::int64_t t = dir.reverse ? T - 1 - s : s;
    const std::int64_t previous = dir.reverse ? t + 1 : t - 1;
    Tensor gates_t = step(gates, t), c_t = step(c, t), h_t = step(h, t);
    const Tensor h_prev = s == 0 ? h0 : step(h, previous);
    const Tensor c_prev = s == 0 ? c0 : step(c, previous);
    if (h_prev.defined()) recurrent(h_prev, gates_t);
    cell_forward(gates_t, bias, c_prev, c_t, h_t, describe());
  }
  ctx.save(dir.key + ".gates", gates);
  ctx.save(dir.key + ".c", c);
  ctx.save(dir.key + ".h", h);
  if (h0.defined()) ctx.save(dir.key + ".h0", h0);
  if (c0.defined()) ctx.save(dir.key + ".c0", c0);
}

TensorList LSTM::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(inputs.size() == 1 || inputs.size() == 3, describe(), ": expected inputs [x] or [x, h0, c0], got ",
             inputs.size(), " tensors");
  detail::check_inputs(*this, inputs, inputs.size());
  const Tensor& x = inputs[0];
  const Direction& first = directions_.front();
  LOOM_CHECK(x.rank() == 3 && x.size(2) == options_.input_size && x.size(1) > 0, describe(), ": input shape ",
             x.shape().str(), " does not match ", first.weight_ih.name, " shape ", first.weight_ih.value.shape().str(),
             " (expected [N, T > 0, ", options_.input_size, "])");
  detail::check_like(*this, "input", x, first.weight_ih.value, first.weight_ih.name);
  const std::int64_t N = x.size(0), T = x.size(1), H = options_.hidden_size, S = state_slots();
  const bool has_state = inputs.size() == 3;
  if (has_state) {
    for (std::size_t i = 1; i < 3; ++i) {
      detail::check_same_shape(*this, i == 1 ? "h0" : "c0", inputs[i], {N, S, H});
      detail::check_like(*this, i == 1 ? "h0" : "c0", inputs[i], first.weight_ih.value, first.weight_ih.name);
    }
  }

  MemoryCategoryScope scope(MemoryCategory::activations);
  ctx.save_shape("input", x.shape());
  ctx.save_shape("state", has_state ? Shape{N, S, H} : Shape{});
  Tensor h_n = Tensor::empty({N, S, H}, x.dtype(), x.device());
  Tensor c_n = Tensor::empty({N, S, H}, x.dtype(), x.device());
  Tensor layer_input = detail::swap_leading_dims(x);
  for (std::int64_t layer = 0; layer < options_.num_layers; ++layer) {
    const std::int64_t D = directions_of(layer);
    ctx.save(detail::concat("l", layer, ".input"), layer_input);
    Tensor layer_output;
    if (D > 1) layer_output = Tensor::empty({T, N, D * H}, x.dtype(), x.device());
    for (const Direction& dir : directions_) {
      if (dir.layer != layer) continue;
      const Tensor h0 = has_state ? state_slot(inputs[1], dir.slot) : Tensor();
      const Tensor c0 = has_state ? state_slot(inputs[2], dir.slot) : Tensor();
      run_direction(dir, layer_input, h0, c0, ctx);
      const Tensor h = ctx.get(dir.key + ".h");
      const std::int64_t last = dir.reverse ? 0 : T - 1;
      set_state_slot(h_n, dir.slot, step(h, last));
      set_state_slot(c_n, dir.slot, step(ctx.get(dir.key + ".c"), last));
      if (D == 1)
        layer_output = h;
      else
        detail::copy_rows(h, 0, H, layer_output, (dir.reverse ? 1 : 0) * H, D * H, T * N, H);
    }
    layer_input = layer_output;
  }
  return {detail::swap_leading_dims(layer_input), h_n, c_n};
}

void LSTM::backprop_direction(const Direction& dir, Context& ctx, const Tensor& grad_output, std::int64_t output_column,
                              std::int64_t output_pitch, const Tensor& grad_h_n, const Tensor& grad_c_n,
                              Tensor& grad_input, bool accumulate_input, Tensor& grad_h0, Tensor& grad_c0) {
  const Tensor gates = ctx.get(dir.key + ".gates");
  const Tensor c = ctx.get(dir.key + ".c");
  const Tensor c0 = ctx.has(dir.key + ".c0") ? ctx.get(dir.key + ".c0") : Tensor();
  const std::int64_t T = gates.size(0), N = gates.size(1), H = options_.hidden_size;
  Tensor grad_gates;
  {
    MemoryCategoryScope scope(MemoryCategory::activations);  // kept for backward_weight
    grad_gates = Tensor::empty({T, N, 4 * H}, gates.dtype(), gates.device());
  }
  MemoryCategoryScope scope(MemoryCategory::workspace);
  Tensor grad_h = grad_h_n.defined() ? state_slot(grad_h_n, dir.slot)
                                     : Tensor::zeros({N, H}, gates.dtype(), gates.device());
  Tensor grad_c = grad_c_n.defined() ? state_slot(grad_c_n, dir.slot)
                                     : Tensor::zeros({N, H}, gates.dtype(), gates.device());
  const ops::RepeatedGemm recurrent(dir.weight_hh.value, false, N, 0.0);  // grad_h = grad_gates_t W_hh
  for (std::int64_t s = 0; s < T; ++s) {
    const std::int64_t t = dir.reverse ? s : T - 1 - s;
    const bool first_step = s == T - 1;  // the forward's first step: its predecessor is the initial state
    const Tensor c_prev = first_step ? c0 : step(c, dir.reverse ? t + 1 : t - 1);
    Tensor grad_gates_t = step(grad_gates, t);
    cell_backward(step(gates, t), step(c, t), c_prev, grad_output, t * N * output_pitch + output_column, output_pitch,
                  grad_h, grad_c, grad_gates_t, describe());
    if (!first_step || grad_h0.defined()) recurrent(grad_gates_t, grad_h);
  }
  if (grad_h0.defined()) {
    set_state_slot(grad_h0, dir.slot, grad_h);
    set_state_slot(grad_c0, dir.slot, grad_c);
  }
  Tensor grad_input_rows = as_rows(grad_input);
  ops::gemm(as_rows(grad_gates), false, dir.weight_ih.value, false, grad_input_rows, 1.0, accumulate_input ? 1.0 : 0.0);
  ctx.save(dir.key + ".grad_gates", grad_gates);
}

TensorList LSTM::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs.size() <= 3, describe(), ": expected 1 to 3 output gradients, got ",
             grad_outputs.size());
  const Shape input_shape = ctx.get_shape("input");
  const bool has_state = ctx.get_shape("state").rank() == 3;
  const std::int64_t N = input_shape[0], T = input_shape[1], H = options_.hidden_size, S = state_slots();
  const Tensor& reference = directions_.front().weight_ih.value;
  const Tensor grad_y = grad_outputs[0];
  const Tensor grad_h_n = grad_outputs.size() > 1 ? grad_outputs[1] : Tensor();
  const Tensor grad_c_n = grad_outputs.size() > 2 ? grad_outputs[2] : Tensor();
  if (grad_y.defined()) {
    detail::check_same_shape(*this, "output gradient", grad_y, {N, T, output_size()});
    detail::check_like(*this, "output gradient", grad_y, reference, directions_.front().weight_ih.name);
  }
  if (grad_h_n.defined()) detail::check_same_shape(*this, "h_n gradient", grad_h_n, {N, S, H});
  if (grad_c_n.defined()) detail::check_same_shape(*this, "c_n gradient", grad_c_n, {N, S, H});

  Tensor grad_h0, grad_c0;
  if (has_state) {
    grad_h0 = Tensor::zeros({N, S, H}, reference.dtype(), reference.device());
    grad_c0 = Tensor::zeros({N, S, H}, reference.dtype(), reference.device());
  }
  Tensor grad_output;
  if (grad_y.defined()) {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    grad_output = detail::swap_leading_dims(grad_y);
  }
  for (std::int64_t layer = options_.num_layers - 1; layer >= 0; --layer) {
    const std::int64_t D = directions_of(layer);
    const std::int64_t input_size = ctx.get(detail::concat("l", layer, ".input")).size(2);
    Tensor grad_input;
    {
      MemoryCategoryScope scope(MemoryCategory::workspace);
      grad_input = Tensor::empty({T, N, input_size}, reference.dtype(), reference.device());
    }
    bool accumulate = false;
    for (const Direction& dir : directions_) {
      if (dir.layer != layer) continue;
      backprop_direction(dir, ctx, grad_output, (dir.reverse ? 1 : 0) * H, D * H, grad_h_n, grad_c_n, grad_input,
                         accumulate, grad_h0, grad_c0);
      accumulate = true;
    }
    grad_output = grad_input;
  }
  Tensor grad_x = detail::swap_leading_dims(grad_output);
  if (has_state) return {grad_x, grad_h0, grad_c0};
  return {grad_x};
}

void LSTM::backward_weight(Context& ctx) {
  for (Direction& dir : directions_) {
    const Tensor grad_gates = ctx.get(dir.key + ".grad_gates");
    const Tensor input = ctx.get(detail::concat("l", dir.layer, ".input"));
    const Tensor h = ctx.get(dir.key + ".h");
    const std::int64_t T = grad_gates.size(0);
    const Tensor grad_rows = as_rows(grad_gates);
    ops::gemm(grad_rows, true, as_rows(input), false, dir.weight_ih.grad, 1.0, 1.0);
    // Step t's recurrent input is h_{t-1} (forward) or h_{t+1} (reverse).
    if (T > 1) {
      if (dir.reverse)
        ops::gemm(steps(grad_gates, 0, T - 1), true, steps(h, 1, T), false, dir.weight_hh.grad, 1.0, 1.0);
      else
        ops::gemm(steps(grad_gates, 1, T), true, steps(h, 0, T - 1), false, dir.weight_hh.grad, 1.0, 1.0);
    }
    if (ctx.has(dir.key + ".h0"))
      ops::gemm(step(grad_gates, dir.reverse ? T - 1 : 0), true, ctx.get(dir.key + ".h0"), false, dir.weight_hh.grad,
                1.0, 1.0);
    ops::bias_grad(grad_rows, dir.bias_ih.grad);
    ops::bias_grad(grad_rows, dir.bias_hh.grad);
  }
  ctx.clear();
}

std::vector<Shape> LSTM::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK((input_shapes.size() == 1 || input_shapes.size() == 3) && input_shapes[0].rank() == 3 &&
                 input_shapes[0][2] == options_.input_size,
             "LSTM: expected input shapes [N, T, ", options_.input_size, "] (+ two [N, S, H] states)");
  const std::int64_t N = input_shapes[0][0], T = input_shapes[0][1];
  const Shape state{N, state_slots(), options_.hidden_size};
  return {Shape{N, T, output_size()}, state, state};
}

double LSTM::flops(const std::vector<Shape>& input_shapes) const {
  const std::int64_t N = input_shapes.at(0)[0], T = input_shapes.at(0)[1], H = options_.hidden_size;
  double total = 0;
  for (const Direction& dir : directions_)
    total += 2.0 * static_cast<double>(N * T) * static_cast<double>(4 * H) * static_cast<double>(dir.input_size + H) +
             10.0 * static_cast<double>(N * T * H);
  return total;
}

std::size_t LSTM::activation_bytes(const std::vector<Shape>& input_shapes) const {
  output_shapes(input_shapes);
  const std::int64_t N = input_shapes[0][0], T = input_shapes[0][1], H = options_.hidden_size;
  std::int64_t elements = N * T * options_.input_size;  // the time-major copy of the input
  for (std::int64_t layer = 0; layer < options_.num_layers; ++layer) {
    const std::int64_t D = directions_of(layer);
    elements += D * N * T * 6 * H;          // gates, c, h per direction
    if (D > 1) elements += N * T * D * H;   // the concatenated output
  }
  return static_cast<std::size_t>(elements) * 4;
}

}  // namespace loom

#pragma GCC diagnostic pop
