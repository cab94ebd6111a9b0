// GNMT blocks (see gnmt.h). Child contexts: 0 the LSTM, 1 the attention.
#include <loom/layers/gnmt.h>

#include <loom/core/memory.h>
#include <loom/core/ops.h>

#include "layer_util.h"
#include "strided_copy.h"

namespace loom {

namespace {

// The outputs of a block: its own, then inputs[consumed...] passed through.
TensorList with_pass_through(TensorList own, const TensorList& inputs, std::size_t consumed) {
  for (std::size_t i = consumed; i < inputs.size(); ++i) own.push_back(inputs[i]);
  return own;
}

// The input gradients of a block: its own, then the gradients of the passed-through tensors,
// which sit in grad_outputs after the block's own outputs (undefined where none came back).
TensorList with_pass_through_grads(TensorList own, const TensorList& grad_outputs, std::size_t own_outputs,
                                   std::size_t total_inputs) {
  for (std::size_t i = own.size(); i < total_inputs; ++i) {
    const std::size_t from = own_outputs + (i - own.size());
    own.push_back(from < grad_outputs.size() ? grad_outputs[from] : Tensor());
  }
  return own;
}

void remember_input_count(Context& ctx, std::size_t count) {
  ctx.save_shape("inputs", Shape{static_cast<std::int64_t>(count)});
}

std::size_t input_count(const Context& ctx) { return static_cast<std::size_t>(ctx.get_shape("inputs")[0]); }

// [N, T, a] and [N, T, b] -> [N, T, a + b].
Tensor concat_features(const Tensor& a, const Tensor& b) {
  const std::int64_t rows = a.size(0) * a.size(1), wa = a.size(2), wb = b.size(2);
  Tensor out = Tensor::empty({a.size(0), a.size(1), wa + wb}, a.dtype(), a.device());
  detail::copy_rows(a, 0, wa, out, 0, wa + wb, rows, wa);
  detail::copy_rows(b, 0, wb, out, wa, wa + wb, rows, wb);
  return out;
}

// Columns [begin, begin + width) of an [N, T, F] tensor as a new [N, T, width] tensor.
Tensor feature_slice(const Tensor& x, std::int64_t begin, std::int64_t width) {
  const std::int64_t rows = x.size(0) * x.size(1), features = x.size(2);
  Tensor out = Tensor::empty({x.size(0), x.size(1), width}, x.dtype(), x.device());
  detail::copy_rows(x, begin, features, out, 0, width, rows, width);
  return out;
}

std::vector<Shape> pass_through_shapes(std::vector<Shape> own, const std::vector<Shape>& inputs, std::size_t consumed) {
  for (std::size_t i = consumed; i < inputs.size(); ++i) own.push_back(inputs[i]);
  return own;
}

}  // namespace

void GnmtRecurrentLayer::backward_weight(Context& ctx) {
  rnn_.backward_weight(ctx.child(0));
  ctx.clear();
}

// ---- encoder -----------------------------------------------------------------------------------

GnmtEncoderLayer::GnmtEncoderLayer(const GnmtEncoderLayerOptions& options)
    : GnmtRecurrentLayer({.input_size = options.input_size,
                          .hidden_size = options.hidden_size,
                          .bidirectional_first = options.bidirectional}),
      options_(options) {
  LOOM_CHECK(!options_.residual || (!options_.bidirectional && options_.input_size == options_.hidden_size),
             "GnmtEncoderLayer: a residual layer needs input_size == hidden_size (got ", options_.input_size, " and ",
             options_.hidden_size, ") and one direction");
}

TensorList GnmtEncoderLayer::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(!inputs.empty() && inputs[0].defined(), describe(), ": expected inputs [x, ...]");
  MemoryCategoryScope scope(MemoryCategory::activations);
  remember_input_count(ctx, inputs.size());
  Tensor y = rnn_.forward({inputs[0]}, ctx.child(0))[0];
  if (options_.residual) ops::axpy(1.0, inputs[0], y);
  return with_pass_through({y}, inputs, 1);
}

TensorList GnmtEncoderLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined(), describe(), ": the output gradient is undefined");
  MemoryCategoryScope scope(MemoryCategory::activations);
  Tensor grad_x = rnn_.backward_input({grad_outputs[0]}, ctx.child(0))[0];
  if (options_.residual) ops::axpy(1.0, grad_outputs[0], grad_x);
  return with_pass_through_grads({grad_x}, grad_outputs, 1, input_count(ctx));
}

std::vector<Shape> GnmtEncoderLayer::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(!input_shapes.empty(), "GnmtEncoderLayer: no input shapes");
  return pass_through_shapes({rnn_.output_shapes({input_shapes[0]})[0]}, input_shapes, 1);
}

double GnmtEncoderLayer::flops(const std::vector<Shape>& input_shapes) const {
  return rnn_.flops({input_shapes.at(0)}) + (options_.residual ? static_cast<double>(input_shapes[0].numel()) : 0.0);
}

std::size_t GnmtEncoderLayer::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return rnn_.activation_bytes({input_shapes.at(0)});
}

// ---- decoder layer 0: LSTM + attention ----------------------------------------------------------

GnmtAttentionLayer::GnmtAttentionLayer(const GnmtAttentionLayerOptions& options)
    : GnmtRecurrentLayer({.input_size = options.input_size, .hidden_size = options.hidden_size}),
      options_(options),
      attention_({.query_size = options.hidden_size, .key_size = options.hidden_size, .units = options.hidden_size}) {}

TensorList GnmtAttentionLayer::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(inputs.size() >= consumed(), describe(), ": expected inputs [encoder_out, decoder_in",
             options_.key_padding_mask ? ", key_padding_mask" : "", ", ...], got ", inputs.size(), " tensors");
  MemoryCategoryScope scope(MemoryCategory::activations);
  remember_input_count(ctx, inputs.size());
  const Tensor h = rnn_.forward({inputs[1]}, ctx.child(0))[0];
  TensorList attention_inputs{h, inputs[0]};
  if (options_.key_padding_mask) attention_inputs.push_back(inputs[2]);
  const Tensor context = attention_.forward(attention_inputs, ctx.child(1))[0];
  return with_pass_through({h, context}, inputs, consumed());
}

TensorList GnmtAttentionLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined(), describe(), ": the output gradient is undefined");
  MemoryCategoryScope scope(MemoryCategory::activations);
  Tensor grad_h = grad_outputs[0].clone();
  Tensor grad_encoder;
  if (grad_outputs.size() > 1 && grad_outputs[1].defined()) {
    const TensorList attention_grads = attention_.backward_input({grad_outputs[1]}, ctx.child(1));
    ops::axpy(1.0, attention_grads[0], grad_h);
    grad_encoder = attention_grads[1];
  } else {  // the context was not used downstream
    const Shape context_shape{grad_h.size(0), grad_h.size(1), options_.hidden_size};
    const TensorList attention_grads =
        attention_.backward_input({Tensor::zeros(context_shape, grad_h.dtype(), grad_h.device())}, ctx.child(1));
    grad_encoder = attention_grads[1];
  }
  const Tensor grad_decoder_in = rnn_.backward_input({grad_h}, ctx.child(0))[0];
  TensorList own{grad_encoder, grad_decoder_in};
  if (options_.key_padding_mask) own.emplace_back();
  return with_pass_through_grads(own, grad_outputs, 2, input_count(ctx));
}

void GnmtAttentionLayer::backward_weight(Context& ctx) {
  attention_.backward_weight(ctx.child(1));
  GnmtRecurrentLayer::backward_weight(ctx);
}

std::vector<Shape> GnmtAttentionLayer::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() >= consumed(), "GnmtAttentionLayer: expected shapes [encoder_out, decoder_in, ...]");
  const Shape h = rnn_.output_shapes({input_shapes[1]})[0];
  return pass_through_shapes({h, h}, input_shapes, consumed());
}

double GnmtAttentionLayer::flops(const std::vector<Shape>& input_shapes) const {
  const Shape h = rnn_.output_shapes({input_shapes.at(1)})[0];
  return rnn_.flops({input_shapes[1]}) + attention_.flops({h, input_shapes[0]});
}

std::size_t GnmtAttentionLayer::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape h = rnn_.output_shapes({input_shapes.at(1)})[0];
  return rnn_.activation_bytes({input_shapes[1]}) + attention_.activation_bytes({h, input_shapes[0]});
}

// ---- decoder layers >= 1 -------------------------------------------------------------------------

GnmtDecoderLayer::GnmtDecoderLayer(const GnmtDecoderLayerOptions& options)
    : GnmtRecurrentLayer({.input_size = 2 * options.hidden_size, .hidden_size = options.hidden_size}),
      options_(options) {}

TensorList GnmtDecoderLayer::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(inputs.size() >= 2 && inputs[0].defined() && inputs[1].defined(), describe(),
             ": expected inputs [x, context, ...]");
  const Shape expected{inputs[0].size(0), inputs[0].size(1), options_.hidden_size};
  detail::check_same_shape(*this, "x", inputs[0], expected);
  detail::check_same_shape(*this, "context", inputs[1], expected);
  MemoryCategoryScope scope(MemoryCategory::activations);
  remember_input_count(ctx, inputs.size());
  Tensor y = rnn_.forward({concat_features(inputs[0], inputs[1])}, ctx.child(0))[0];
  if (options_.residual) ops::axpy(1.0, inputs[0], y);
  return with_pass_through({y, inputs[1]}, inputs, 2);
}

TensorList GnmtDecoderLayer::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined(), describe(), ": the output gradient is undefined");
  MemoryCategoryScope scope(MemoryCategory::activations);
  const Tensor& grad_y = grad_outputs[0];
  const Tensor grad_input = rnn_.backward_input({grad_y}, ctx.child(0))[0];
  const std::int64_t H = options_.hidden_size;
  Tensor grad_x = feature_slice(grad_input, 0, H);
  Tensor grad_context = feature_slice(grad_input, H, H);
  if (options_.residual) ops::axpy(1.0, grad_y, grad_x);
  if (grad_outputs.size() > 1 && grad_outputs[1].defined()) ops::axpy(1.0, grad_outputs[1], grad_context);
  return with_pass_through_grads({grad_x, grad_context}, grad_outputs, 2, input_count(ctx));
}

std::vector<Shape> GnmtDecoderLayer::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() >= 2, "GnmtDecoderLayer: expected shapes [x, context, ...]");
  return pass_through_shapes({input_shapes[0], input_shapes[1]}, input_shapes, 2);
}

double GnmtDecoderLayer::flops(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  return rnn_.flops({Shape{x[0], x[1], 2 * options_.hidden_size}});
}

std::size_t GnmtDecoderLayer::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  const Shape concatenated{x[0], x[1], 2 * options_.hidden_size};
  return rnn_.activation_bytes({concatenated}) + detail::f32_bytes(concatenated);
}

}  // namespace loom
