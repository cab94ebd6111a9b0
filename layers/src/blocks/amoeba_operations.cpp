// AmoebaNet-D's genotype and its operations (see amoeba_cell.h, amoeba_operations.h).
#include "amoeba_operations.h"

#include <loom/layers/activation.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/pooling.h>
#include <loom/layers/sequential.h>

namespace loom {

const AmoebaGenotype& amoebanet_d_normal_genotype() {
  using K = AmoebaOpKind;
  static const AmoebaGenotype genotype{{{1, K::conv_1x1},
                                        {1, K::max_pool_3x3},
                                        {1, K::none},
                                        {0, K::conv_1x7_7x1},
                                        {0, K::conv_1x1},
                                        {0, K::conv_1x7_7x1},
                                        {2, K::max_pool_3x3},
                                        {2, K::none},
                                        {1, K::avg_pool_3x3},
                                        {5, K::conv_1x1}},
                                       {0, 3, 4, 6}};
  return genotype;
}

const AmoebaGenotype& amoebanet_d_reduction_genotype() {
  using K = AmoebaOpKind;
  static const AmoebaGenotype genotype{{{0, K::max_pool_2x2},
                                        {0, K::max_pool_3x3},
                                        {2, K::none},
                                        {1, K::conv_3x3},
                                        {2, K::conv_1x7_7x1},
                                        {2, K::max_pool_3x3},
                                        {3, K::none},
                                        {1, K::max_pool_2x2},
                                        {2, K::avg_pool_3x3},
                                        {3, K::conv_1x1}},
                                       {4, 5, 6}};
  return genotype;
}

namespace detail {

namespace {

void add_relu_conv_bn(Sequential& s, std::int64_t in, std::int64_t out, Size2 kernel, Size2 stride, Size2 padding) {
  s.emplace<ReLU>();
  s.emplace<Conv2d>(Conv2dOptions{
      .in_channels = in, .out_channels = out, .kernel = kernel, .stride = stride, .padding = padding, .bias = false});
  s.emplace<BatchNorm2d>(BatchNorm2dOptions{.channels = out});
}

// The pool itself; a 2x2 max pool only makes sense as a reduction (stride 2).
void add_pool(Sequential& s, AmoebaOpKind kind, std::int64_t stride) {
  if (kind == AmoebaOpKind::max_pool_2x2) {
    LOOM_CHECK(stride == 2, "AmoebaNet max_pool_2x2 needs stride 2 (a reduction cell's input), got stride ", stride);
    s.emplace<MaxPool2d>(Pool2dOptions{.kernel = 2, .stride = Size2(2)});
  } else if (kind == AmoebaOpKind::max_pool_3x3) {
    s.emplace<MaxPool2d>(Pool2dOptions{.kernel = 3, .stride = Size2(stride), .padding = 1});
  } else {
    s.emplace<AvgPool2d>(Pool2dOptions{.kernel = 3, .stride = Size2(stride), .padding = 1, .count_include_pad = false});
  }
}

}  // namespace

LayerPtr relu_conv_bn(std::int64_t in, std::int64_t out, Size2 kernel, Size2 stride, Size2 padding) {
  auto s = std::make_unique<Sequential>();
  add_relu_conv_bn(*s, in, out, kernel, stride, padding);
  return s;
}

LayerPtr amoeba_operation(AmoebaOpKind kind, std::int64_t in, std::int64_t channels, std::int64_t stride) {
  auto s = std::make_unique<Sequential>();
  const std::int64_t narrow = channels / 4;
  switch (kind) {
    case AmoebaOpKind::none:
      if (stride == 1 && in == channels) return nullptr;
      add_relu_conv_bn(*s, in, channels, 1, stride, 0);  // TensorFlow's reference: 1x1 conv when shapes differ
      break;
    case AmoebaOpKind::conv_1x1:
      add_relu_conv_bn(*s, in, channels, 1, stride, 0);
      break;
    case AmoebaOpKind::conv_3x3:
      add_relu_conv_bn(*s, in, narrow, 1, 1, 0);
      add_relu_conv_bn(*s, narrow, narrow, 3, stride, 1);
      add_relu_conv_bn(*s, narrow, channels, 1, 1, 0);
      break;
    case AmoebaOpKind::conv_1x7_7x1:
      add_relu_conv_bn(*s, in, narrow, 1, 1, 0);
      add_relu_conv_bn(*s, narrow, narrow, {1, 7}, {1, stride}, {0, 3});
      add_relu_conv_bn(*s, narrow, narrow, {7, 1}, {stride, 1}, {3, 0});
      add_relu_conv_bn(*s, narrow, channels, 1, 1, 0);
      break;
    case AmoebaOpKind::max_pool_2x2:
    case AmoebaOpKind::max_pool_3x3:
    case AmoebaOpKind::avg_pool_3x3:
      add_pool(*s, kind, stride);
      if (in != channels) {  // TensorFlow's reference maps the pooled state's channels
        s->emplace<Conv2d>(Conv2dOptions{.in_channels = in, .out_channels = channels, .kernel = 1, .bias = false});
        s->emplace<BatchNorm2d>(BatchNorm2dOptions{.channels = channels});
      }
      break;
  }
  return s;
}

const char* amoeba_op_name(AmoebaOpKind kind) {
  switch (kind) {
    case AmoebaOpKind::none: return "none";
    case AmoebaOpKind::conv_1x1: return "conv_1x1";
    case AmoebaOpKind::conv_3x3: return "conv_3x3";
    case AmoebaOpKind::conv_1x7_7x1: return "conv_1x7_7x1";
    case AmoebaOpKind::max_pool_2x2: return "max_pool_2x2";
    case AmoebaOpKind::max_pool_3x3: return "max_pool_3x3";
    case AmoebaOpKind::avg_pool_3x3: return "avg_pool_3x3";
  }
  return "?";
}

}  // namespace detail
}  // namespace loom
