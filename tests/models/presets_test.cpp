// Every preset builds at every size; at paper size (a meta build: no weights allocated) the
// parameter counts equal torchvision's (VGG, ResNet) or the published DAPPLE profiles' totals
// (GNMT, BERT), with the differences the presets' notes explain; tiny presets run a forward.
#include <catch2/catch.hpp>

#include <cmath>

#include <fstream>
#include <regex>

#include <loom/core/memory.h>
#include <loom/models/model.h>

using namespace loom;

namespace {

// Sum of parameter_size (bytes) / 4 over a graph.txt profile's nodes (data/profiles/dapple/NAME; a
// missing file fails the test: the profiles are part of the repository).
double profile_parameters(const std::string& name) {
  const std::string path = std::string(LOOM_PROFILES_DIR) + "/dapple/" + name;
  std::ifstream in(path);
  if (!in) FAIL("missing published profile " << path);
  const std::regex field("parameter_size=([0-9.eE+]+)");
  double bytes = 0;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, field)) bytes += std::stod(m[1]);
  }
  return bytes / 4;
}

std::int64_t parameters(const std::string& model) { return summarize(make_model(model)).parameters; }

}  // namespace

TEST_CASE("paper-size parameter counts match torchvision", "[models]") {
  CHECK(parameters("vgg16") == 138357544);
  CHECK(parameters("vgg19") == 143667240);
  CHECK(parameters("resnet50") == 25557032);
}

TEST_CASE("paper-size parameter counts match the DAPPLE profiles", "[models]") {
  // GNMT: the profile's normalised Bahdanau attention lists linear_q, linear_k and linear_att but
  // not normalize_scalar and normalize_bias (1 + 1024 values).
  const double gnmt = profile_parameters("gnmt-16-pbs-64.txt");
  CHECK(gnmt == 290747088);
  CHECK(parameters("gnmt16") == static_cast<std::int64_t>(gnmt) + 1025);
  // BERT: the profile has the pooler (1024 x 1024 + 1024) and no MLM head; loom has the MLM head
  // and no pooler: dense (1024 x 1024 + 1024), LayerNorm (2 x 1024), the decoder's bias (30522); its
  // weight is the word embedding's (tied, counted once). Untied, the decoder adds 1024 x 30522.
  const std::int64_t pooler = 1024 * 1024 + 1024, head = pooler + 2 * 1024 + 30522, decoder = 1024 * 30522;
  for (const auto& [model, file, total] : std::vector<std::tuple<std::string, std::string, std::int64_t>>{
           {"bert48", "bert-48-pbs-2.txt", 637451264}, {"bert24", "bert-24-pbs-6.txt", 335141888}}) {
    const double published = profile_parameters(file);
    INFO(model);
    CHECK(published == total);
    CHECK(parameters(model) == static_cast<std::int64_t>(published) - pooler + head);
    CHECK(std::abs(static_cast<double>(parameters(model)) - published) <= 1e-4 * published);  // within 0.01%
    const ModelSummary untied = summarize(make_model(model, "tie_embeddings=0"));
    CHECK(untied.parameters == parameters(model) + decoder);
    CHECK(untied.tied_copies == 0);
    CHECK(summarize(make_model(model)).tied_copies == decoder);  // on its stage all the same
  }
}

TEST_CASE("a paper-size meta build allocates nothing", "[models]") {
  const std::int64_t before = memory_stats().live_bytes;
  const ModelSummary bert = summarize(make_model("bert48"));
  CHECK(memory_stats().live_bytes == before);
  CHECK(bert.blocks.size() == 50);  // embeddings, 48 layers, MLM head
  CHECK(bert.blocks.at(1).output_bytes == 512 * 1024 * 4);
}

TEST_CASE("every preset builds at every size and runs a tiny forward", "[models]") {
  for (const std::string& name : model_names()) {
    INFO(name);
    for (const ModelSize size : {ModelSize::paper, ModelSize::cpu, ModelSize::tiny}) {
      const ModelSpec spec = make_model(name, "", size);
      const ModelSummary summary = summarize(spec, 2);
      CHECK(summary.parameters > 0);
      CHECK(static_cast<std::int64_t>(summary.blocks.size()) == spec.blocks());
      if (size == ModelSize::paper && name != "mlp" && name != "cnn" && name != "gpt") CHECK(spec.blocks() >= 8);
    }
    const ModelSpec spec = make_model(name, "", ModelSize::tiny);
    auto model = spec.build_all();
    model->initialize(3);
    std::vector<std::int64_t> dims{2};
    for (const std::int64_t d : spec.data.sample_shape.vec()) dims.push_back(d);
    Tensor x = Tensor::zeros(Shape(dims), spec.data.input_dtype);
    if (spec.data.input_dtype == DType::i64)
      for (std::int64_t i = 0; i < x.numel(); ++i) x.data<std::int64_t>()[i] = 1 + i % (spec.data.classes - 2);
    Context ctx;
    const Tensor logits = model->forward({x}, ctx).at(0);
    CHECK(logits.size(-1) == spec.data.classes);
  }
}

// A profile and a plan record a model as settings_text; --set reads it back as the same settings.
TEST_CASE("settings_text reads back as the same settings through --set", "[models]") {
  for (const std::string& name : model_names())
    for (const ModelSize size : {ModelSize::paper, ModelSize::cpu, ModelSize::tiny}) {
      const ModelSpec spec = make_model(name, "", size);
      const std::string text = settings_text(spec.settings);
      CAPTURE(name, text);
      CHECK(make_model(name, text, ModelSize::tiny).settings == spec.settings);
    }
  CHECK(settings_text({{"dropout", 0.1}, {"hidden", 256}}) == "dropout=0.1,hidden=256");
}

TEST_CASE("preset errors name the model and the setting", "[models]") {
  CHECK_THROWS_WITH(make_model("vgg19", "image=100"), Catch::Contains("vgg19") && Catch::Contains("image"));
  CHECK_THROWS_WITH(make_model("bert48", "dim=1000"), Catch::Contains("heads"));
  CHECK_THROWS_WITH(make_model("resnet51"), Catch::Contains("unknown model") && Catch::Contains("resnet50"));
  CHECK_THROWS_WITH(parse_model_size("huge"), Catch::Contains("paper, cpu or tiny"));
}
