// AmoebaNet cell (see amoeba_cell.h). Child contexts: 0 reduce1, 1 reduce2, 2 + i operation i.
// The state shapes are saved by forward, so backward can stand in zeros for a state whose
// gradient nothing produced (the output's s_prev entry may come back undefined).
#include <loom/layers/amoeba_cell.h>

#include <string>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/layers/factorized_reduce.h>

#include "../channel_concat.h"
#include "../layer_util.h"
#include "amoeba_operations.h"

namespace loom {

namespace {

constexpr std::size_t kReduce1 = 0, kReduce2 = 1, kFirstOp = 2;

// sum += g (a fresh tensor: either may be shared with a caller).
void accumulate(Tensor& sum, const Tensor& g) {
  if (!g.defined()) return;
  if (!sum.defined()) {
    sum = g;
    return;
  }
  Tensor out = detail::empty_like(g);
  ops::add(sum, g, out);
  sum = out;
}

std::string state_key(std::size_t i) { return "state" + std::to_string(i); }

}  // namespace

struct AmoebaCell::Shapes {
  std::vector<Shape> states;
  Shape output;
};

AmoebaCell::~AmoebaCell() = default;

AmoebaCell::AmoebaCell(const AmoebaCellOptions& options)
    : options_(options),
      genotype_(options.reduction ? &amoebanet_d_reduction_genotype() : &amoebanet_d_normal_genotype()) {
  const auto& o = options_;
  LOOM_CHECK(o.channels > 0 && o.channels % 4 == 0 && o.prev_channels > 0 && o.prev_prev_channels >= 0,
             "AmoebaCell: channels (", o.channels, ") must be a positive multiple of 4 and prev_channels (",
             o.prev_channels, ") positive");
  LOOM_CHECK(!o.reduction_prev || o.prev_prev_channels > 0, "AmoebaCell: reduction_prev needs an s_prev_prev input");
  reduce1_ = detail::relu_conv_bn(o.prev_channels, o.channels);
  if (o.reduction_prev)
    reduce2_ = std::make_unique<FactorizedReduce>(o.prev_prev_channels, o.channels);
  else if (o.prev_prev_channels > 0 && o.prev_prev_channels != o.channels)
    reduce2_ = detail::relu_conv_bn(o.prev_prev_channels, o.channels);
  // State 1's channels: s_prev itself when there is no s_prev_prev (the first stem cell).
  const std::int64_t second = o.prev_prev_channels > 0 ? o.channels : o.prev_channels;
  for (const AmoebaOp& op : genotype_->operations) {
    const std::int64_t in = op.input == 1 ? second : o.channels;
    const std::int64_t stride = o.reduction && op.input < 2 ? 2 : 1;
    ops_.push_back(detail::amoeba_operation(op.kind, in, o.channels, stride));
  }
}

std::int64_t AmoebaCell::output_channels(const AmoebaCellOptions& options) {
  const AmoebaGenotype& genotype =
      options.reduction ? amoebanet_d_reduction_genotype() : amoebanet_d_normal_genotype();
  return options.channels * static_cast<std::int64_t>(genotype.concat.size());
}

std::vector<std::pair<std::string, Layer*>> AmoebaCell::children() {
  std::vector<std::pair<std::string, Layer*>> out{{"reduce1", reduce1_.get()}};
  if (reduce2_) out.emplace_back("reduce2", reduce2_.get());
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i]) out.emplace_back("ops." + std::to_string(i), ops_[i].get());
  return out;
}

AmoebaCell::Shapes AmoebaCell::infer(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == input_count(), type(), ": expected ", input_count(), " input shape(s), got ",
             input_shapes.size());
  Shapes s;
  s.states.push_back(reduce1_->output_shapes({input_shapes.back()})[0]);
  s.states.push_back(reduce2_ ? reduce2_->output_shapes({input_shapes[0]})[0] : input_shapes[0]);
  for (std::size_t i = 0; i < ops_.size(); i += 2) {
    Shape pair[2];
    for (std::size_t j = 0; j < 2; ++j) {
      const Shape& in = s.states.at(static_cast<std::size_t>(genotype_->operations[i + j].input));
      pair[j] = ops_[i + j] ? ops_[i + j]->output_shapes({in})[0] : in;
    }
    LOOM_CHECK(pair[0] == pair[1], type(), ": ", detail::amoeba_op_name(genotype_->operations[i].kind), " gives ",
               pair[0].str(), " but ", detail::amoeba_op_name(genotype_->operations[i + 1].kind), " gives ",
               pair[1].str(), " for inputs of shape ", input_shapes.back().str(),
               options_.reduction ? " (a reduction cell needs even input sizes)" : "");
    s.states.push_back(pair[0]);
  }
  const Shape& last = s.states.back();
  s.output = Shape{last[0], out_channels(), last[2], last[3]};
  return s;
}

TensorList AmoebaCell::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, input_count());
  MemoryCategoryScope scope(MemoryCategory::activations);
  const Tensor& prev = inputs.back();
  std::vector<Tensor> states{reduce1_->forward({prev}, ctx.child(kReduce1))[0]};
  states.push_back(reduce2_ ? reduce2_->forward({inputs[0]}, ctx.child(kReduce2))[0] : inputs[0]);
  for (std::size_t i = 0; i < ops_.size(); i += 2) {
    Tensor pair[2];
    for (std::size_t j = 0; j < 2; ++j) {
      const Tensor& in = states.at(static_cast<std::size_t>(genotype_->operations[i + j].input));
      pair[j] = ops_[i + j] ? ops_[i + j]->forward({in}, ctx.child(kFirstOp + i + j))[0] : in;
    }
    LOOM_CHECK(pair[0].shape() == pair[1].shape(), describe(), ": operations ", i, " and ", i + 1, " give ",
               pair[0].shape().str(), " and ", pair[1].shape().str(),
               options_.reduction ? " (a reduction cell needs even input sizes)" : "");
    Tensor sum = detail::empty_like(pair[0]);
    ops::add(pair[0], pair[1], sum);
    states.push_back(sum);
  }
  std::vector<Tensor> chosen;
  for (const int index : genotype_->concat) chosen.push_back(states.at(static_cast<std::size_t>(index)));
  for (std::size_t i = 0; i < states.size(); ++i) ctx.save_shape(state_key(i), states[i].shape());
  return {prev, detail::concat_channels(chosen)};
}

TensorList AmoebaCell::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(grad_outputs.size() == 2 && grad_outputs[1].defined(), describe(),
             ": expected the gradients of [s_prev, s_new] (s_new's defined)");
  MemoryCategoryScope scope(MemoryCategory::activations);
  const Tensor& grad_new = grad_outputs[1];
  const std::size_t state_count = kFirstOp + ops_.size() / 2;
  // The gradient of state i, zeros when nothing reached it.
  std::vector<Tensor> grads(state_count);
  const auto grad_of = [&](std::size_t i) {
    if (!grads[i].defined()) grads[i] = Tensor::zeros(ctx.get_shape(state_key(i)), grad_new.dtype(), grad_new.device());
    return grads[i];
  };
  std::vector<std::int64_t> widths(genotype_->concat.size(), options_.channels);
  const std::vector<Tensor> parts = detail::split_channels(grad_new, widths);
  for (std::size_t j = 0; j < parts.size(); ++j) accumulate(grads[static_cast<std::size_t>(genotype_->concat[j])], parts[j]);
  for (std::size_t i = ops_.size(); i-- > 0;) {
    const Tensor g = grad_of(kFirstOp + i / 2);
    const Tensor g_in = ops_[i] ? ops_[i]->backward_input({g}, ctx.child(kFirstOp + i))[0] : g;
    accumulate(grads[static_cast<std::size_t>(genotype_->operations[i].input)], g_in);
  }
  Tensor grad_prev = reduce1_->backward_input({grad_of(0)}, ctx.child(kReduce1))[0];
  const Tensor grad_second = reduce2_ ? reduce2_->backward_input({grad_of(1)}, ctx.child(kReduce2))[0] : grad_of(1);
  accumulate(grad_prev, grad_outputs[0]);
  if (input_count() == 1) {
    accumulate(grad_prev, grad_second);
    return {grad_prev};
  }
  return {grad_second, grad_prev};
}

void AmoebaCell::backward_weight(Context& ctx) {
  reduce1_->backward_weight(ctx.child(kReduce1));
  if (reduce2_) reduce2_->backward_weight(ctx.child(kReduce2));
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i]) ops_[i]->backward_weight(ctx.child(kFirstOp + i));
  ctx.clear();
}

std::vector<Shape> AmoebaCell::output_shapes(const std::vector<Shape>& input_shapes) const {
  return {input_shapes.back(), infer(input_shapes).output};
}

double AmoebaCell::flops(const std::vector<Shape>& input_shapes) const {
  const Shapes s = infer(input_shapes);
  double total = reduce1_->flops({input_shapes.back()}) + (reduce2_ ? reduce2_->flops({input_shapes[0]}) : 0.0);
  for (std::size_t i = 0; i < ops_.size(); ++i) {
    const Shape& in = s.states[static_cast<std::size_t>(genotype_->operations[i].input)];
    if (ops_[i]) total += ops_[i]->flops({in});
    if (i % 2 == 1) total += static_cast<double>(s.states[kFirstOp + i / 2].numel());  // the pair's sum
  }
  return total;
}

std::size_t AmoebaCell::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shapes s = infer(input_shapes);
  std::size_t total = reduce1_->activation_bytes({input_shapes.back()}) +
                      (reduce2_ ? reduce2_->activation_bytes({input_shapes[0]}) : 0);
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i]) total += ops_[i]->activation_bytes({s.states[static_cast<std::size_t>(genotype_->operations[i].input)]});
  return total;
}

}  // namespace loom
