// The BERT presets (Devlin et al., BERT-large sizes with 24 or 48 layers, as in the DAPPLE paper):
// an embedding block (word + learned position + token-type embeddings, LayerNorm, dropout), one
// block per post-LN transformer layer (GELU), and the masked-LM head (dense + GELU + LayerNorm,
// then the decoder to the vocabulary), trained on TokenTask::masked.
#include <loom/core/ops.h>
#include <loom/layers/activation.h>
#include <loom/layers/dropout.h>
#include <loom/layers/layer_norm.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/transformer.h>

#include "../model_settings.h"
#include "gpt.h"
#include "presets.h"

namespace loom {

namespace {

// x [n, T, dim] += token_type_embeddings[0]: every token is of segment 0 here (one-segment
// masked LM), so the token-type table's row 0 acts as a bias; row 1 is kept for the count.
class TokenTypeEmbedding : public UnaryLayer {
 public:
  explicit TokenTypeEmbedding(std::int64_t dim)
      : weight_(make_parameter("weight", {2, dim}, Init::normal(0.0, 0.02))) {}
  std::string type() const override { return "TokenTypeEmbedding"; }
  Tensor forward_tensor(const Tensor& x, Context& /*ctx*/) override {
    Tensor y = x.clone();
    ops::bias_add(y, weight_.value.slice(0, 1).reshape({-1}));
    return y;
  }
  Tensor backward_input_tensor(const Tensor& grad_y, Context& ctx) override {
    Tensor row = weight_.grad.slice(0, 1).reshape({-1});
    ops::bias_grad(grad_y, row);
    ctx.clear();
    return grad_y;
  }
  std::vector<Parameter*> local_parameters() override { return {&weight_}; }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override { return input_shapes; }
  double flops(const std::vector<Shape>& input_shapes) const override {
    return static_cast<double>(input_shapes.at(0).numel());
  }
  std::size_t activation_bytes(const std::vector<Shape>& /*input_shapes*/) const override { return 0; }

 private:
  Parameter weight_;
};

void build_bert(ModelSpec& spec) {
  const std::int64_t vocab = setting_int(spec, "vocab", 3), seq = setting_int(spec, "seq"),
                     dim = setting_int(spec, "dim"), heads = setting_int(spec, "heads"),
                     ffn = setting_int(spec, "ffn"), layers = setting_int(spec, "layers");
  const double dropout = setting_fraction(spec, "dropout");
  LOOM_CHECK(dim % heads == 0, "model ", spec.name, ": dim=", dim, " is not divisible by heads=", heads);
  spec.data = {Shape{seq}, DType::i64, Shape{seq}, vocab, TokenTask::masked};
  spec.targets_per_sample = seq;
  add_block(spec, "embeddings", sequence([=](Sequential& s) {
              s.add(std::make_unique<TokenPositionEmbedding>(vocab, seq, dim, 0.0), "words_positions");
              s.add(std::make_unique<TokenTypeEmbedding>(dim), "token_type");
              s.add(std::make_unique<LayerNorm>(dim, 1e-12), "norm");
              s.add(std::make_unique<Dropout>(dropout), "dropout");
            }));
  for (std::int64_t i = 0; i < layers; ++i)
    add_block(spec, "layer" + std::to_string(i), [=] {
      TransformerOptions o;
      o.d_model = dim;
      o.heads = heads;
      o.d_ff = ffn;
      o.dropout = dropout;
      o.activation = ActivationKind::gelu;
      o.layer_norm_eps = 1e-12;
      return LayerPtr(std::make_unique<TransformerEncoderLayer>(o));
    });
  add_block(spec, "mlm_head", sequence([=](Sequential& s) {
              s.add(std::make_unique<Linear>(dim, dim), "dense");
              s.add(std::make_unique<GELU>(), "gelu");
              s.add(std::make_unique<LayerNorm>(dim, 1e-12), "norm");
              s.add(std::make_unique<Linear>(dim, vocab), "decoder");
            }));
  tie_embeddings(spec, "words_positions.token.weight", "decoder.weight");
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

std::vector<PresetSetting> bert_settings(double layers) {
  return {{"vocab", 30522, 257, 16, "WordPiece vocabulary (257 at cpu size: bytes and the mask token)"},
          {"seq", 512, 64, 8, "sequence length (position table)"},
          {"dim", 1024, 128, 16, "hidden size"},
          {"heads", 16, 4, 2, "attention heads"},
          {"ffn", 4096, 512, 32, "feed-forward width"},
          {"layers", layers, 4, 3, "transformer layers"},
          {"dropout", 10, 10, 10, "dropout, percent"},
          tie_embeddings_setting()};
}

const char* kBertNotes =
    "masked LM only (no next-sentence task, no pooler); one segment; the MLM decoder's weight is tied to the "
    "word embedding as in BERT (its bias is its own; --set tie_embeddings=0 unties it, adding vocab x dim "
    "parameters)";

}  // namespace

std::vector<Preset> bert_presets() {
  return {{"bert24", "BERT-large (24 layers, hidden 1024, 16 heads) with the masked-LM head", bert_settings(24),
           kBertNotes, build_bert},
          {"bert48", "BERT-48 (48 layers, hidden 1024, 16 heads; the DAPPLE paper's) with the masked-LM head",
           bert_settings(48), kBertNotes, build_bert}};
}

}  // namespace loom
