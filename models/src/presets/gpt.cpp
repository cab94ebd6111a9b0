// The GPT preset (decoder-only, byte-level) and its embedding block.
#include "gpt.h"

#include <loom/core/ops.h>
#include <loom/layers/layer_norm.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/transformer.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

TokenPositionEmbedding::TokenPositionEmbedding(std::int64_t vocab, std::int64_t max_positions, std::int64_t dim,
                                               double dropout)
    : max_positions_(max_positions), token_(vocab, dim), position_(max_positions, dim), dropout_(dropout) {
  // GPT-2 initialises both tables with N(0, 0.02).
  token_.local_parameters().at(0)->init = Init::normal(0.0, 0.02);
  position_.local_parameters().at(0)->init = Init::normal(0.0, 0.02);
}

TensorList TokenPositionEmbedding::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(inputs.size() == 1 && inputs[0].rank() == 2, "TokenPositionEmbedding: expected tokens [n, T], got ",
             inputs.size(), " inputs");
  const Tensor& tokens = inputs[0];
  const std::int64_t n = tokens.size(0), length = tokens.size(1);
  LOOM_CHECK(length <= max_positions_, "TokenPositionEmbedding: sequence of ", length, " tokens exceeds the ",
             max_positions_, " positions of the model");
  Tensor positions;
  {
    MemoryCategoryScope scratch(MemoryCategory::workspace);  // written on the host, then copied to the device
    Tensor host = Tensor::empty({1, length}, DType::i64);
    for (std::int64_t t = 0; t < length; ++t) host.data<std::int64_t>()[t] = t;
    positions = host.to(tokens.device());
  }
  Tensor x = token_.forward({tokens}, ctx.child(0)).at(0);  // [n, T, dim]
  const Tensor pos = position_.forward({positions}, ctx.child(1)).at(0).reshape({length, -1});
  for (std::int64_t i = 0; i < n; ++i) {
    Tensor row = x.slice(i, i + 1).reshape({length, -1});
    ops::add(row, pos, row);
  }
  return dropout_.forward({x}, ctx.child(2));
}

TensorList TokenPositionEmbedding::backward(const TensorList& grad_outputs, Context& ctx) {
  Tensor g = dropout_.backward(grad_outputs, ctx.child(2)).at(0);  // [n, T, dim]
  const std::int64_t n = g.size(0), length = g.size(1);
  token_.backward({g}, ctx.child(0));
  Tensor pos_grad = Tensor::zeros({1, length, g.size(2)}, g.dtype(), g.device());
  Tensor pos_rows = pos_grad.reshape({length, -1});
  for (std::int64_t i = 0; i < n; ++i) ops::axpy(1.0, g.slice(i, i + 1).reshape({length, -1}), pos_rows);
  position_.backward({pos_grad}, ctx.child(1));
  ctx.clear();
  return {Tensor()};  // token ids get no gradient
}

std::vector<std::pair<std::string, Layer*>> TokenPositionEmbedding::children() {
  return {{"token", &token_}, {"position", &position_}, {"dropout", &dropout_}};
}

std::vector<Shape> TokenPositionEmbedding::output_shapes(const std::vector<Shape>& input_shapes) const {
  return token_.output_shapes(input_shapes);
}

double TokenPositionEmbedding::flops(const std::vector<Shape>& input_shapes) const {
  return static_cast<double>(output_shapes(input_shapes).at(0).numel());
}

std::size_t TokenPositionEmbedding::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return token_.activation_bytes(input_shapes) + dropout_.activation_bytes(output_shapes(input_shapes));
}

namespace {

void build_gpt(ModelSpec& spec) {
  const std::int64_t vocab = setting_int(spec, "vocab", 2), seq = setting_int(spec, "seq"),
                     dim = setting_int(spec, "dim"), heads = setting_int(spec, "heads"),
                     layers = setting_int(spec, "layers");
  const double dropout = setting_fraction(spec, "dropout");
  LOOM_CHECK(dim % heads == 0, "model gpt: dim=", dim, " is not divisible by heads=", heads);
  spec.data = {Shape{seq}, DType::i64, Shape{seq}, vocab};
  spec.targets_per_sample = seq;
  add_block(spec, "embedding",
            [=] { return LayerPtr(std::make_unique<TokenPositionEmbedding>(vocab, seq, dim, dropout)); });
  for (std::int64_t i = 0; i < layers; ++i) {
    add_block(spec, "layer" + std::to_string(i), [=] {
      TransformerOptions options;
      options.d_model = dim;
      options.heads = heads;
      options.d_ff = 4 * dim;
      options.dropout = dropout;
      options.activation = ActivationKind::gelu;
      options.norm_first = true;
      options.causal = true;
      return LayerPtr(std::make_unique<TransformerEncoderLayer>(options));
    });
  }
  add_block(spec, "head", sequence([=](Sequential& head) {
              head.emplace<LayerNorm>(dim);
              head.emplace<Linear>(dim, vocab);
            }));
  tie_embeddings(spec, "token.weight", "1.weight");
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

}  // namespace

std::vector<Preset> gpt_presets() {
  return {{"gpt",
           "decoder-only transformer over bytes: embedding (token + position), pre-LN causal blocks, head",
           {{"vocab", 256, 256, 256, "vocabulary (256: bytes, for text:PATH)"},
            {"seq", 64, 64, 8, "sequence length"},
            {"dim", 128, 128, 16, "model width"},
            {"heads", 4, 4, 2, "attention heads"},
            {"layers", 4, 4, 4, "transformer blocks"},
            {"dropout", 10, 10, 10, "dropout, percent"},
            tie_embeddings_setting()},
           "not a paper model: the same at paper and cpu size; the head's projection is tied to the token "
           "embedding (GPT-2's lm_head; its bias is its own)",
           build_gpt}};
}

}  // namespace loom
