// AmoebaNet-D cells (Real et al. 2019, as GPipe trains it): a cell reads the outputs of the two
// previous cells, s_prev_prev and s_prev, and combines them through five pairs of operations.
//
// Inputs [s_prev_prev, s_prev] (or [s_prev] alone: the first stem cell, whose second state is its
// input itself, as TensorFlow's reference builds it with prev_layer = None); outputs
// [s_prev, s_new], so a stage boundary carries both states the next cell needs.
//   state 0 = relu-conv1x1-bn(s_prev) to `channels`            (reduce1)
//   state 1 = s_prev_prev brought to state 0's shape            (reduce2): FactorizedReduce when
//             it is twice as large (the previous cell reduced), relu-conv1x1-bn when only its
//             channels differ, itself otherwise
//   pair k: state 2 + k = op_a(state[i_a]) + op_b(state[i_b])   (ops on states 0, 1 have stride 2
//                                                                in a reduction cell)
//   s_new = concat(states listed in the genotype's concat)      (channels * concat.size())
// Operations (torchgpipe's benchmarks/models/amoebanet): conv_1x1 = relu-conv-bn; conv_3x3 and
// conv_1x7_7x1 = relu-conv-bn stacks through a channels / 4 bottleneck (1x1, 3x3 or 1x7 + 7x1,
// 1x1); pools are PyTorch's (3x3 with padding 1, average excluding padding; 2x2 max). As in
// TensorFlow's reference, an operation whose input state has other than `channels` channels (only
// the first stem cell's raw input) maps it: convs start from its channels, pools and `none` are
// followed (none: replaced) by a 1x1 conv + bn. Reduction cells need even input sizes (2x2 and
// 3x3 pools must agree).
// Parameter names: reduce1.{0,1,2}, reduce2 (FactorizedReduce: conv1, conv2, bn), ops.<i>.<j>.
// backward_input / backward_weight split every convolution's backward.
#pragma once

#include <cstdint>
#include <vector>

#include <loom/layers/layer.h>

namespace loom {

enum class AmoebaOpKind : unsigned char { none, conv_1x1, conv_3x3, conv_1x7_7x1, max_pool_2x2, max_pool_3x3, avg_pool_3x3 };

struct AmoebaOp {
  int input = 0;  // state index
  AmoebaOpKind kind = AmoebaOpKind::none;
};

struct AmoebaGenotype {
  std::vector<AmoebaOp> operations;  // pairs: 2k and 2k + 1 make state 2 + k
  std::vector<int> concat;           // states concatenated into the cell's output
};

// AmoebaNet-D's genotype as torchgpipe (and TensorFlow's reference) define it: normal concat
// [0, 3, 4, 6] (TF's, which reproduces GPipe's parameter counts), reduction concat [4, 5, 6].
const AmoebaGenotype& amoebanet_d_normal_genotype();
const AmoebaGenotype& amoebanet_d_reduction_genotype();

struct AmoebaCellOptions {
  std::int64_t prev_prev_channels = 0;  // 0: no s_prev_prev input (the first stem cell)
  std::int64_t prev_channels = 0;
  std::int64_t channels = 0;            // of every state; the output has channels * concat.size()
  bool reduction = false;
  bool reduction_prev = false;          // s_prev_prev has twice s_prev's spatial size
};

class AmoebaCell : public SplitBackwardLayer {
 public:
  explicit AmoebaCell(const AmoebaCellOptions& options);
  ~AmoebaCell() override;

  std::string type() const override { return options_.reduction ? "AmoebaReductionCell" : "AmoebaNormalCell"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override;
  TensorList backward_input(const TensorList& grad_outputs, Context& ctx) override;
  void backward_weight(Context& ctx) override;
  std::vector<std::pair<std::string, Layer*>> children() override;

  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override;
  double flops(const std::vector<Shape>& input_shapes) const override;
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override;

  const AmoebaCellOptions& options() const { return options_; }
  std::int64_t out_channels() const { return output_channels(options_); }
  // channels * the genotype's concat size, without building the cell.
  static std::int64_t output_channels(const AmoebaCellOptions& options);

 private:
  struct Shapes;  // every state's shape for given input shapes
  Shapes infer(const std::vector<Shape>& input_shapes) const;
  std::size_t input_count() const { return options_.prev_prev_channels > 0 ? 2 : 1; }

  AmoebaCellOptions options_;
  const AmoebaGenotype* genotype_;
  LayerPtr reduce1_;
  LayerPtr reduce2_;             // null: state 1 is s_prev_prev (or s_prev) itself
  std::vector<LayerPtr> ops_;    // null: identity
};

}  // namespace loom
