// The AmoebaNet-D presets (amoebanet36, amoebanet18): GPipe's image model, sized as in the DAPPLE
// profiles (data/profiles/dapple/amoeba-36-pbs-1.txt, amoeba-18-pbs-8.txt): `layers` normal
// cells in three equal groups between two reduction cells, after a stem convolution and
// `stem_cells` reduction cells, then a ReLU + global average pool + Linear head. One block per
// cell; the blocks pass [s_prev, s_new] (layers/amoeba_cell.h), named as the profiles name their
// nodes (stem, cell_stem_0, ..., cell_0, ..., reduction_cell_0, ..., final_layer).
#include <loom/layers/activation.h>
#include <loom/layers/amoeba_cell.h>
#include <loom/layers/batch_norm.h>
#include <loom/layers/conv2d.h>
#include <loom/layers/dropout.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/pooling.h>
#include <loom/layers/select_input.h>

#include "../model_settings.h"
#include "presets.h"

namespace loom {

namespace {

// The cell chain's running state while blocks are added: the channels of s_prev_prev (0: none
// yet) and s_prev, and whether the last cell reduced.
struct CellChain {
  std::int64_t prev_prev = 0, prev = 0;
  bool reduced = false;

  void add(ModelSpec& spec, const std::string& name, std::int64_t channels, bool reduction) {
    const AmoebaCellOptions options{.prev_prev_channels = prev_prev,
                                    .prev_channels = prev,
                                    .channels = channels,
                                    .reduction = reduction,
                                    .reduction_prev = reduced && prev_prev > 0};
    add_block(spec, name, [options] { return LayerPtr(std::make_unique<AmoebaCell>(options)); });
    prev_prev = prev;
    prev = AmoebaCell::output_channels(options);
    reduced = reduction;
  }
};

void build_amoebanet(ModelSpec& spec) {
  const std::int64_t layers = setting_int(spec, "layers", 3), filters = setting_int(spec, "filters", 4),
                     stem_filters = setting_int(spec, "stem_filters"), stem_cells = setting_int(spec, "stem_cells", 0),
                     image = setting_int(spec, "image", 4), in_channels = setting_int(spec, "in_channels"),
                     classes = setting_int(spec, "classes", 2);
  const double dropout = setting_fraction(spec, "dropout");
  LOOM_CHECK(layers % 3 == 0, "model ", spec.name, ": layers=", layers, " must be a multiple of 3 (three groups)");
  // A cell is about 40 layers, so its blocks cost the meta build, `describe` and the planner 2.5
  // times a transformer block's: 1500 cells take as long as the 10000 blocks of the other presets.
  constexpr std::int64_t kMaxCells = 1500;
  LOOM_CHECK(layers <= kMaxCells, "model ", spec.name, ": layers=", layers, " is more than ", kMaxCells,
             " cells (GPipe trained 36)");
  LOOM_CHECK(filters % (4 << stem_cells) == 0, "model ", spec.name, ": filters=", filters,
             " must be a multiple of 4 * 2^stem_cells = ", 4 << stem_cells, " (the stem cells' channels)");
  spec.data = {Shape{in_channels, image, image}, DType::f32, Shape{}, classes};

  add_block(spec, "stem", sequence([in_channels, stem_filters](Sequential& s) {
              s.emplace<Conv2d>(Conv2dOptions{.in_channels = in_channels, .out_channels = stem_filters, .kernel = 3,
                                              .stride = 2, .padding = 1, .bias = false});
              s.emplace<BatchNorm2d>(BatchNorm2dOptions{.channels = stem_filters});
            }));
  CellChain chain{.prev = stem_filters};
  for (std::int64_t i = 0; i < stem_cells; ++i)
    chain.add(spec, "cell_stem_" + std::to_string(i), filters >> (stem_cells - i), true);
  std::int64_t channels = filters, normal = 0;
  for (std::int64_t group = 0; group < 3; ++group) {
    if (group > 0) chain.add(spec, "reduction_cell_" + std::to_string(group - 1), channels *= 2, true);
    for (std::int64_t i = 0; i < layers / 3; ++i) chain.add(spec, "cell_" + std::to_string(normal++), channels, false);
  }
  add_block(spec, "final_layer", sequence([features = chain.prev, classes, dropout](Sequential& s) {
              s.emplace<SelectInput>(-1, 2);
              s.emplace<ReLU>();
              s.emplace<GlobalAvgPool2d>();
              if (dropout > 0) s.emplace<Dropout>(dropout);
              s.emplace<Linear>(features, classes);
            }));
  spec.make_loss = [] { return LayerPtr(std::make_unique<CrossEntropyLoss>()); };
}

std::vector<PresetSetting> amoebanet_settings(double paper_layers) {
  return {{"layers", paper_layers, 6, 3, "normal cells, in three equal groups (a multiple of 3)"},
          {"filters", 512, 32, 8, "channels of the first group's cells (doubled by each reduction cell)"},
          {"stem_filters", 32, 16, 4, "channels of the stem convolution"},
          {"stem_cells", 2, 1, 1, "reduction cells in the stem (channels filters / 2^(stem_cells - i))"},
          {"image", 224, 32, 16, "image height and width (even at every reduction)"},
          {"in_channels", 3, 1, 1, "image channels"},
          {"classes", 1001, 10, 10, "classes (1001: ImageNet with TensorFlow's background class, as profiled)"},
          {"dropout", 0, 0, 0, "dropout before the classifier, percent"}};
}

constexpr const char* kNotes =
    "AmoebaNet-D with torchgpipe's genotype and TensorFlow's stem (what GPipe trained and DAPPLE profiled): "
    "convolution and Linear weights equal the profile's parameter_size exactly; loom also counts BatchNorm's "
    "weight and bias (the profile does not); the stem convolution pads by 1 (112x112 where the profile's VALID "
    "conv gives 111x111; every later shape matches); real max pooling where torchgpipe's max_pool_3x3 averages; "
    "no auxiliary head or drop-path; CPU only (the cells' ZeroPad2d has no CUDA path)";

}  // namespace

std::vector<Preset> amoebanet_presets() {
  return {{"amoebanet36", "AmoebaNet-D (36, 512) of GPipe/DAPPLE: 36 normal cells, 932.8 M conv/Linear weights",
           amoebanet_settings(36), kNotes, build_amoebanet},
          {"amoebanet18", "AmoebaNet-D (18, 512) of DAPPLE: 18 normal cells, 478.6 M conv/Linear weights",
           amoebanet_settings(18), kNotes, build_amoebanet}};
}

}  // namespace loom
