// The AmoebaNet-D presets: at paper size (a meta build, no weights allocated) every block's
// convolution and Linear weights equal the DAPPLE profiles' parameter_size / 4 (profiles/dapple/
// amoeba-36-pbs-1.txt and amoeba-18-pbs-8.txt, copied here as numbers) and the cells' outputs have
// the profiles' activation sizes; at tiny size a short training run on a fixed batch lowers the loss.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>

#include <loom/core/memory.h>
#include <loom/layers/loss.h>
#include <loom/layers/optimizer.h>
#include <loom/models/dataset.h>
#include <loom/models/model.h>

using namespace loom;

namespace {

// parameter_size / 4 of the profiles' nodes; normal cells are named cell_<global index>, so the
// cells after each reduction are looked up by their place in the group (first, second, later).
std::int64_t profile_parameters(const std::string& name, std::int64_t group_size) {
  static const std::map<std::string, std::int64_t> fixed{
      {"stem", 864},           {"cell_stem_0", 61440},         {"cell_stem_1", 331776},
      {"reduction_cell_0", 7798784}, {"reduction_cell_1", 31195136}, {"final_layer", 8201193}};
  if (const auto it = fixed.find(name); it != fixed.end()) return it->second;
  const std::int64_t index = std::stoll(name.substr(5)), group = index / group_size, place = index % group_size;
  static const std::int64_t normal[3][3] = {{2097152, 2949120, 3604480},
                                            {11272192, 13369344, 14417920},
                                            {45088768, 53477376, 57671680}};
  return normal[group][std::min<std::int64_t>(place, 2)];
}

// activation_size / 4 of the cells (the new state; the stem's differs: see the preset's notes).
std::int64_t profile_output_elements(const std::string& name) {
  if (name == "cell_stem_0") return 384 * 56 * 56;
  if (name == "cell_stem_1") return 768 * 28 * 28;
  if (name == "reduction_cell_0") return 3072 * 14 * 14;
  if (name == "reduction_cell_1") return 6144 * 7 * 7;
  return -1;
}

// Convolution and Linear weights of each block and the Linear bias (what the profile counts:
// everything but BatchNorm), from a meta build.
std::vector<std::int64_t> profiled_parameters(const ModelSpec& spec) {
  MetaScope meta;
  std::vector<std::int64_t> counts;
  for (std::int64_t b = 0; b < spec.blocks(); ++b) {
    std::int64_t count = 0;
    const std::unique_ptr<Chain> block = spec.build(b, b + 1);  // alive while its parameters are read
    for (const NamedParameter& p : block->parameters()) {
      const bool linear_bias = spec.block_names[static_cast<std::size_t>(b)] == "final_layer" &&
                               p.parameter->value.rank() == 1;
      if (p.parameter->trainable && (p.parameter->value.rank() >= 2 || linear_bias)) count += p.parameter->value.numel();
    }
    counts.push_back(count);
  }
  return counts;
}

void check_paper_size(const std::string& model, std::int64_t layers, std::int64_t profile_total,
                      std::int64_t batch_norm_parameters) {
  const ModelSpec spec = make_model(model);
  REQUIRE(spec.blocks() == layers + 6);  // stem, 2 stem cells, 2 reduction cells, final_layer
  const std::vector<std::int64_t> counts = profiled_parameters(spec);
  std::int64_t total = 0;
  for (std::int64_t b = 0; b < spec.blocks(); ++b) {
    const std::string& name = spec.block_names[static_cast<std::size_t>(b)];
    INFO(model << " block " << b << " " << name);
    CHECK(counts[static_cast<std::size_t>(b)] == profile_parameters(name, layers / 3));
    total += counts[static_cast<std::size_t>(b)];
  }
  CHECK(total == profile_total);

  const ModelSummary summary = summarize(spec, 1);
  CHECK(summary.parameters == profile_total + batch_norm_parameters);
  for (const BlockInfo& block : summary.blocks) {
    INFO(block.name);
    if (block.name.rfind("cell_", 0) == 0 && block.name.find("stem") == std::string::npos) {
      const std::int64_t index = std::stoll(block.name.substr(5)), group = index / (layers / 3);
      CHECK(block.output_shapes.back().numel() == (2048 << group) * (28 >> group) * (28 >> group));
    } else if (profile_output_elements(block.name) > 0) {
      CHECK(block.output_shapes.back().numel() == profile_output_elements(block.name));
    }
  }
  CHECK(summary.blocks.back().output_shapes == std::vector<Shape>{{1, 1001}});
}

}  // namespace

TEST_CASE("amoebanet36 and amoebanet18 have the DAPPLE profiles' parameters and shapes") {
  // BatchNorm weights and biases (the profiles leave them out) add 0.77 M and 0.41 M; the same
  // totals come out of the PyTorch cells of tests/layers/reference/amoeba.py assembled alike.
  SECTION("amoebanet36") { check_paper_size("amoebanet36", 36, 932783945, 774400); }
  SECTION("amoebanet18") { check_paper_size("amoebanet18", 18, 478619465, 408832); }
}

TEST_CASE("amoebanet at tiny size learns a fixed batch") {
  const ModelSpec spec = make_model("amoebanet36", "", ModelSize::tiny);
  CHECK(spec.data.sample_shape == Shape{1, 16, 16});
  std::unique_ptr<Chain> model = spec.build_all();
  model->initialize(7);
  LayerPtr loss = spec.make_loss();
  auto data = open_dataset("synthetic", DatasetSplit::train, spec.data, 3);
  Tensor inputs, targets;
  const std::vector<std::int64_t> rows{0, 1, 2, 3, 4, 5, 6, 7};
  data->read(rows, inputs, targets);
  Adam optimizer(model->parameters());
  double first = 0, last = 0;
  for (int step = 0; step < 25; ++step) {
    Context ctx, loss_ctx;
    const TensorList logits = model->forward({inputs}, ctx);
    const double value = loss->forward({logits[0], targets}, loss_ctx)[0].to_double_vector()[0];
    const Tensor one = Tensor::full({}, 1.0);
    model->backward({loss->backward({one}, loss_ctx).at(0)}, ctx);
    optimizer.step(3e-3);
    optimizer.zero_grad();
    if (step == 0) first = value;
    last = value;
  }
  INFO("loss " << first << " -> " << last);
  CHECK(last < 0.5 * first);
}
