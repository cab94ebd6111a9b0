// The XLNet presets (Yang et al. 2019, XLNet-Large shape: hidden 1024, 16 heads, FFN 4096, GELU,
// post-LN), 36 layers as DAPPLE's xlnet-36 profile and 24 as XLNet-Large, permutation language
// modelling with two-stream relative attention (layers/xlnet.h).
//
// Parameters against the DAPPLE profiles (data/profiles/dapple/xlnet-{36,24}-pbs-1.txt, totals
// 500.75 M and 344.75 M f32 values, node by node): the profile writes sizes in MiB as 10^6 bytes
// (a layer's 2 MiB output = [512, 1024] f32 shows as 2000000, so seq = 512; its ATTN_MASK 1 MiB =
// [512, 512]), and each layer's 13,642,752 values (52.04 MiB) as 52e6 bytes, i.e. 13.0 M; only
// Embed-Token is decimal (32000 x 1024 x 4 = 131.07e6 bytes, written 131e6). The head's weight is
// tied to Embed-Token as in XLNet (tie_embeddings=1; its bias adds 32000), and the
// embedding block adds the query stream's mask embedding (1024). tests/models/xlnet_test.cpp
// checks every block against its profile node under that rounding.
#include <loom/layers/loss.h>
#include <loom/layers/xlnet.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

namespace {

void build_xlnet(ModelSpec& spec) {
  XLNetOptions options;
  options.vocab = setting_int(spec, "vocab", 2);
  options.d_model = setting_int(spec, "dim", 2);
  options.heads = setting_int(spec, "heads");
  options.d_ff = setting_int(spec, "ffn");
  options.dropout = setting_fraction(spec, "dropout");
  const std::int64_t seq = setting_int(spec, "seq"), layers = setting_int(spec, "layers");
  LOOM_CHECK(options.d_model % options.heads == 0 && options.d_model % 2 == 0, "model ", spec.name,
             ": dim=", options.d_model, " must be even and divisible by heads=", options.heads);
  spec.data = {Shape{seq}, DType::i64, Shape{seq}, options.vocab, TokenTask::permutation};
  spec.targets_per_sample = seq;
  add_block(spec, "embedding", [=] { return LayerPtr(std::make_unique<XLNetEmbedding>(options)); });
  for (std::int64_t i = 0; i < layers; ++i)
    add_block(spec, "layer" + std::to_string(i), [=] { return LayerPtr(std::make_unique<XLNetLayer>(options)); });
  add_block(spec, "head", [=] { return LayerPtr(std::make_unique<XLNetHead>(options)); });
  tie_embeddings(spec, "word.weight", "output.weight");
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

Preset xlnet_preset(const std::string& name, double paper_layers) {
  return {name,
          "XLNet permutation LM: embedding (word + mask embedding, factorisation orders), two-stream "
          "relative-attention post-LN layers, LM head on the query stream",
          {{"vocab", 32000, 256, 64, "vocabulary (256: bytes, for text:PATH)"},
           {"seq", 512, 64, 8, "sequence length (512: the DAPPLE profile's)"},
           {"dim", 1024, 128, 16, "model width"},
           {"heads", 16, 4, 2, "attention heads"},
           {"ffn", 4096, 512, 32, "feed-forward width (GELU)"},
           {"layers", paper_layers, 4, 3, "XLNet layers"},
           {"dropout", 10, 10, 10, "dropout, percent"},
           tie_embeddings_setting()},
          "no Transformer-XL memory (segment recurrence), no segment embeddings or segment bias, no partial "
          "prediction (every token is predicted from the tokens before it in a new random order each step); "
          "the LM head's weight is tied to the word embedding as in XLNet (--set tie_embeddings=0 unties it), "
          "its bias adds vocab parameters to the DAPPLE profile's count; the profile's per-layer sizes are "
          "MiB rounded down (models/src/presets/xlnet.cpp); CPU only",
          build_xlnet};
}

}  // namespace

std::vector<Preset> xlnet_presets() { return {xlnet_preset("xlnet36", 36), xlnet_preset("xlnet24", 24)}; }

}  // namespace loom
