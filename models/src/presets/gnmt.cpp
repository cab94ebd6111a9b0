// The GNMT presets (Wu et al. 2016, as in the MLPerf / NVIDIA reference that PipeDream and DAPPLE
// train): an embedding block (source and target tables over one vocabulary), one block per LSTM
// layer (encoder: bidirectional layer 0, layer 1 reading 2H, residual layers from 2 on; decoder:
// layer 0 with the normalised Bahdanau attention, then layers reading [x, context], residual from
// 2 on), dropout before every LSTM layer but the first, and the classifier. Blocks carry
// [encoder side, decoder side] lists, so a stage cut passes the encoder output with the decoder
// input, or the decoder state with the attention context.
#include <loom/core/ops.h>
#include <loom/layers/dropout.h>
#include <loom/layers/embedding.h>
#include <loom/layers/gnmt.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>

#include "../model_settings.h"
#include "list_layers.h"
#include "presets.h"

namespace loom {

namespace {

// tokens [n, 2T] (source, then decoder input) -> [source embedding, target embedding], [n, T, H].
class GnmtEmbedding : public Layer {
 public:
  GnmtEmbedding(std::int64_t vocab, std::int64_t hidden) : source_(vocab, hidden, 0), target_(vocab, hidden, 0) {}
  std::string type() const override { return "GNMTEmbedding"; }
  TensorList forward(const TensorList& inputs, Context& ctx) override {
    LOOM_CHECK(inputs.size() == 1 && inputs[0].rank() == 2 && inputs[0].size(1) % 2 == 0, describe(),
               ": expected tokens [n, 2T] (source then decoder input)");
    const auto [source, target] = halves(inputs[0]);
    return {source_.forward({source}, ctx.child(0)).at(0), target_.forward({target}, ctx.child(1)).at(0)};
  }
  TensorList backward(const TensorList& grad_outputs, Context& ctx) override {
    source_.backward({grad_outputs.at(0)}, ctx.child(0));
    if (grad_outputs.size() > 1 && grad_outputs[1].defined()) target_.backward({grad_outputs[1]}, ctx.child(1));
    ctx.clear();
    return {Tensor()};  // token ids get no gradient
  }
  std::vector<std::pair<std::string, Layer*>> children() override {
    return {{"encoder_embedding", &source_}, {"decoder_embedding", &target_}};
  }
  std::vector<Shape> output_shapes(const std::vector<Shape>& input_shapes) const override {
    const Shape& s = input_shapes.at(0);
    const Shape half{s[0], s[1] / 2};
    return {source_.output_shapes({half}).at(0), target_.output_shapes({half}).at(0)};
  }
  double flops(const std::vector<Shape>& input_shapes) const override {
    return static_cast<double>(2 * output_shapes(input_shapes).at(0).numel());
  }
  std::size_t activation_bytes(const std::vector<Shape>& input_shapes) const override {
    const Shape& s = input_shapes.at(0);
    return 2 * source_.activation_bytes({Shape{s[0], s[1] / 2}});
  }

 private:
  static std::pair<Tensor, Tensor> halves(const Tensor& tokens) {
    const std::int64_t n = tokens.size(0), length = tokens.size(1) / 2;
    LOOM_CHECK(tokens.dtype() == DType::i64, "GNMTEmbedding: token ids must be i64");
    const Tensor host = tokens.to(Device::cpu());
    Tensor source = Tensor::empty({n, length}, DType::i64), target = Tensor::empty({n, length}, DType::i64);
    const auto* in = host.data<std::int64_t>();
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t t = 0; t < length; ++t) {
        source.data<std::int64_t>()[i * length + t] = in[i * 2 * length + t];
        target.data<std::int64_t>()[i * length + t] = in[i * 2 * length + length + t];
      }
    return {source.to(tokens.device()), target.to(tokens.device())};
  }
  Embedding source_, target_;
};

// Dropout on the first entry, then the recurrent block.
std::function<LayerPtr()> recurrent(std::function<LayerPtr()> make, double dropout) {
  return sequence([=](Sequential& s) {
    if (dropout > 0) s.add(std::make_unique<OnFirst>(std::make_unique<Dropout>(dropout), true), "dropout");
    s.add(make(), "lstm");
  });
}

void build_gnmt(ModelSpec& spec, std::int64_t encoder_layers, std::int64_t decoder_layers) {
  const std::int64_t vocab = setting_int(spec, "vocab", 3), seq = setting_int(spec, "seq"),
                     hidden = setting_int(spec, "hidden");
  const double dropout = setting_fraction(spec, "dropout");
  spec.data = {Shape{2 * seq}, DType::i64, Shape{seq}, vocab, TokenTask::translate};
  spec.targets_per_sample = seq;
  add_block(spec, "embedding", [=] { return LayerPtr(std::make_unique<GnmtEmbedding>(vocab, hidden)); });
  for (std::int64_t i = 0; i < encoder_layers; ++i) {
    const GnmtEncoderLayerOptions o{.input_size = i == 1 ? 2 * hidden : hidden,
                                    .hidden_size = hidden,
                                    .bidirectional = i == 0,
                                    .residual = i >= 2};
    add_block(spec, "encoder" + std::to_string(i),
              recurrent([o] { return LayerPtr(std::make_unique<GnmtEncoderLayer>(o)); }, i == 0 ? 0.0 : dropout));
  }
  const GnmtAttentionLayerOptions attention{.input_size = hidden, .hidden_size = hidden};
  add_block(spec, "decoder0", [attention] { return LayerPtr(std::make_unique<GnmtAttentionLayer>(attention)); });
  for (std::int64_t i = 1; i < decoder_layers; ++i) {
    const GnmtDecoderLayerOptions o{.hidden_size = hidden, .residual = i >= 2};
    add_block(spec, "decoder" + std::to_string(i),
              recurrent([o] { return LayerPtr(std::make_unique<GnmtDecoderLayer>(o)); }, dropout));
  }
  add_block(spec, "classifier", [=] {
    return LayerPtr(std::make_unique<OnFirst>(std::make_unique<Linear>(hidden, vocab), false));
  });
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

std::vector<PresetSetting> gnmt_settings() {
  return {{"vocab", 36560, 32, 12, "shared source/target vocabulary (the DAPPLE profile's 36,560)"},
          {"seq", 35, 12, 5, "source and target length (35: the profile's mean batch length)"},
          {"hidden", 1024, 128, 8, "LSTM hidden size (embedding width, attention units)"},
          {"dropout", 20, 20, 20, "dropout before LSTM layers 1.., percent"}};
}

const char* kGnmtNotes =
    "teacher forcing over fixed-length sequences (no padding or packing); the normalised attention "
    "has normalize_scalar and normalize_bias (1,025 values the DAPPLE profile does not list)";

}  // namespace

std::vector<Preset> gnmt_presets() {
  return {{"gnmt8", "GNMT-8: 4 encoder + 4 decoder LSTM layers with normalised Bahdanau attention",
           gnmt_settings(), kGnmtNotes, [](ModelSpec& spec) { build_gnmt(spec, 4, 4); }},
          {"gnmt16", "GNMT-16: 8 encoder + 8 decoder LSTM layers with normalised Bahdanau attention",
           gnmt_settings(), kGnmtNotes, [](ModelSpec& spec) { build_gnmt(spec, 8, 8); }}};
}

}  // namespace loom
