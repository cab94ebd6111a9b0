// fashion-mnist, text:PATH and synthetic datasets (see dataset.h).
#include <loom/models/dataset.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>

#include <loom/core/parallel.h>
#include <loom/core/philox.h>
#include <loom/core/rng.h>

#include "idx_file.h"
#include "input_file.h"
#include "token_tasks.h"

namespace loom {

namespace {

Tensor with_rows(std::int64_t rows, const Shape& sample, DType dtype) {
  std::vector<std::int64_t> dims{rows};
  for (const auto d : sample.vec()) dims.push_back(d);
  return Tensor::empty(Shape(dims), dtype);
}

// Images normalised to [0, 1] then standardised with the dataset's mean and std.
class FashionMnist final : public Dataset {
 public:
  FashionMnist(DatasetSplit split, const DataShape& expected) : shape_(expected) {
    const std::string dir = fashion_mnist_dir();
    const std::string prefix = dir + (split == DatasetSplit::train ? "/train" : "/t10k");
    images_ = read_idx_file(prefix + "-images-idx3-ubyte.gz");
    labels_ = read_idx_file(prefix + "-labels-idx1-ubyte.gz");
    LOOM_CHECK(images_.dims.size() == 3 && images_.dims[1] == 28 && images_.dims[2] == 28, prefix,
               "-images-idx3-ubyte.gz: expected [N, 28, 28] images");
    LOOM_CHECK(labels_.dims.size() == 1 && labels_.dims[0] == images_.dims[0], prefix,
               "-labels-idx1-ubyte.gz: ", labels_.dims.empty() ? 0 : labels_.dims[0], " labels for ",
               images_.dims[0], " images");
    const Shape& s = expected.sample_shape;
    const bool flat = s.numel() == 784;
    const bool image = s.rank() == 3 && s[1] >= 28 && s[2] >= 28 && s[0] >= 1 && s[0] <= 4;
    LOOM_CHECK((flat || image) && expected.input_dtype == DType::f32, "fashion-mnist: the model expects inputs ",
               s.str(), " ", dtype_name(expected.input_dtype),
               ", but the images are 28x28 f32 (they can be padded to [C, H, W] with C <= 4, H, W >= 28)");
    if (!flat) {  // centred in an H x W canvas of background, the same plane in every channel
      channels_ = s[0];
      height_ = s[1];
      width_ = s[2];
    }
    for (std::size_t i = 0; i < labels_.data.size(); ++i)
      LOOM_CHECK(labels_.data[i] < 10, prefix, "-labels-idx1-ubyte.gz: label ", int(labels_.data[i]), " of sample ", i,
                 " is not a class in [0, 10)");
    shape_.target_shape = Shape{};
    shape_.classes = 10;
  }
  std::string name() const override { return "fashion-mnist"; }
  std::int64_t size() const override { return images_.dims[0]; }
  DataShape shape() const override { return shape_; }
  void fill(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const override {
    const auto n = static_cast<std::int64_t>(indices.size());
    float* x = inputs.data<float>();
    std::int64_t* y = targets.data<std::int64_t>();
    constexpr float kMean = 0.2860f, kStd = 0.3530f;  // Fashion-MNIST training-set pixel statistics
    const std::int64_t plane = height_ * width_, top = (height_ - 28) / 2, left = (width_ - 28) / 2;
    for (std::int64_t r = 0; r < n; ++r) {
      const std::uint8_t* pixels = images_.data.data() + indices[r] * 784;
      float* sample = x + r * channels_ * plane;
      std::fill(sample, sample + plane, -kMean / kStd);
      for (int p = 0; p < 784; ++p) sample[(top + p / 28) * width_ + left + p % 28] = (pixels[p] / 255.0f - kMean) / kStd;
      for (std::int64_t c = 1; c < channels_; ++c) std::copy(sample, sample + plane, sample + c * plane);
      y[r] = labels_.data[static_cast<std::size_t>(indices[r])];
    }
  }

 private:
  DataShape shape_;
  IdxFile images_, labels_;
  std::int64_t channels_ = 1, height_ = 28, width_ = 28;
};

// Where a missing --data text:PATH was looked for: "; --data text:corpus.txt is read relative to
// /home/u/run, where loom started" (the rank's directory; under mpirun, the launch directory).
std::string where_text_is(const std::string& path) {
  if (std::filesystem::path(path).is_absolute()) return "; check --data text:" + path;
  std::error_code error;
  return "; --data text:" + path + " is read relative to " + std::filesystem::current_path(error).string() +
         ", where loom started";
}

// Non-overlapping windows of T+1 bytes: input bytes [i*T, i*T+T), targets shifted by one.
// The last 10% of windows form the test split.
class TextBytes final : public Dataset {
 public:
  TextBytes(const std::string& path, DatasetSplit split, const DataShape& expected) : path_(path), shape_(expected) {
    require_data_file(path, where_text_is(path));
    std::ifstream in(path, std::ios::binary);
    LOOM_CHECK(in.good(), path, ": cannot open text file");
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    LOOM_CHECK(expected.input_dtype == DType::i64 && expected.sample_shape.rank() == 1,
               "text:", path, ": the model does not take token sequences (expects ", expected.sample_shape.str(), ")");
    LOOM_CHECK(expected.classes >= 256, "text:", path, ": byte-level text needs a vocabulary of at least 256, the model has ",
               expected.classes);
    seq_ = expected.sample_shape[0];
    const std::int64_t windows = bytes_.empty() ? 0 : (static_cast<std::int64_t>(bytes_.size()) - 1) / seq_;
    const std::int64_t test = windows / 10;
    first_ = split == DatasetSplit::train ? 0 : windows - test;
    count_ = split == DatasetSplit::train ? windows - test : test;
    LOOM_CHECK(count_ > 0, path, ": too short (", bytes_.size(), " bytes) for sequences of ", seq_, " bytes");
  }
  std::string name() const override { return "text:" + path_; }
  std::int64_t size() const override { return count_; }
  DataShape shape() const override { return shape_; }
  void fill(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const override {
    const auto n = static_cast<std::int64_t>(indices.size());
    std::int64_t* x = inputs.data<std::int64_t>();
    std::int64_t* y = targets.data<std::int64_t>();
    for (std::int64_t r = 0; r < n; ++r) {
      const std::size_t start = static_cast<std::size_t>((first_ + indices[r]) * seq_);
      for (std::int64_t t = 0; t < seq_; ++t) {
        x[r * seq_ + t] = bytes_[start + t];
        y[r * seq_ + t] = bytes_[start + t + 1];
      }
    }
  }

 private:
  std::string path_;
  DataShape shape_;
  std::vector<unsigned char> bytes_;
  std::int64_t seq_ = 0, first_ = 0, count_ = 0;
};

// Learnable synthetic data from the seed alone. Features: standard normal inputs, label = the
// class whose fixed random prototype has the largest dot product. Tokens: a random walk over the
// vocabulary whose next token depends on the current one (so a model can learn it).
class Synthetic final : public Dataset {
 public:
  Synthetic(DatasetSplit split, const DataShape& expected, std::uint64_t seed)
      : shape_(expected), seed_(seed), offset_(split == DatasetSplit::train ? 0 : kTrainSize),
        size_(split == DatasetSplit::train ? kTrainSize : kTestSize) {
    if (expected.input_dtype == DType::i64) return;
    // One random prototype per class; a sample's label is the prototype it matches best.
    const std::int64_t features = label_features();
    const std::uint64_t key = rng::stream_key("synthetic.prototypes");
    // Stored feature-major (prototypes_[f * classes + c] is prototype c's feature f, drawn as element
    // c * features + f), so that a sample's scores for all classes accumulate side by side.
    prototypes_.resize(static_cast<std::size_t>(expected.classes * features));
    for (std::int64_t c = 0; c < expected.classes; ++c)
      for (std::int64_t f = 0; f < features; ++f)
        prototypes_[static_cast<std::size_t>(f * expected.classes + c)] =
            philox::normal(seed, key, static_cast<std::uint64_t>(c * features + f), 0.0f, 1.0f);
  }
  std::string name() const override { return "synthetic"; }
  std::int64_t size() const override { return size_; }
  DataShape shape() const override { return shape_; }
  void fill(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const override {
    const auto n = static_cast<std::int64_t>(indices.size());
    const std::int64_t features = shape_.sample_shape.numel();
    // Samples are independent: they are made over loom's threads (an ImageNet-sized sample is
    // 150k normals and 1000 dot products).
    parallel_for(n, std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, features)), [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t r = first; r < last; ++r) {
        const auto sample = static_cast<std::uint64_t>(offset_ + indices[r]);
        if (shape_.input_dtype == DType::i64) {
          read_tokens(sample, inputs.data<std::int64_t>() + r * features,
                      targets.data<std::int64_t>() + r * features, features);
        } else {
          read_features(sample, inputs.data<float>() + r * features, targets.data<std::int64_t>() + r, features);
        }
      }
    });
  }

 private:
  static constexpr std::int64_t kTrainSize = 8192, kTestSize = 1024;
  // The label depends on the first (at most 4096) features, so ImageNet-sized samples stay cheap.
  std::int64_t label_features() const { return std::min<std::int64_t>(shape_.sample_shape.numel(), 4096); }

  void read_features(std::uint64_t sample, float* x, std::int64_t* label, std::int64_t features) const {
    const std::uint64_t key = rng::stream_key("synthetic.inputs");
    // x[f] = philox::normal(seed_, key, i = sample * features + f): words 2i and 2i + 1, lanes 0-1 of
    // block i / 2 for an even i and lanes 2-3 for an odd one, so one block serves a pair of features.
    const std::uint64_t first = sample * static_cast<std::uint64_t>(features);
    for (std::int64_t f = 0; f < features;) {
      const std::uint64_t i = first + static_cast<std::uint64_t>(f);
      const philox::Block block = philox::block(seed_, key, i >> 1);
      for (unsigned lane = static_cast<unsigned>(i & 1) * 2; lane < 4 && f < features; lane += 2, ++f)
        x[f] = philox::normal_from_words(block.v[lane], block.v[lane + 1], 0.0f, 1.0f);
    }
    // Each class's score sums its features in order (f = 0, 1, ...), all classes at once.
    const std::int64_t used = label_features(), classes = shape_.classes;
    std::vector<double> score(static_cast<std::size_t>(classes), 0.0);
    for (std::int64_t f = 0; f < used; ++f) {
      const float* row = prototypes_.data() + f * classes;
      for (std::int64_t c = 0; c < classes; ++c) score[static_cast<std::size_t>(c)] += x[f] * row[c];
    }
    double best = -1e300;
    for (std::int64_t c = 0; c < classes; ++c)
      if (score[static_cast<std::size_t>(c)] > best) {
        best = score[static_cast<std::size_t>(c)];
        *label = c;
      }
  }

  void read_tokens(std::uint64_t sample, std::int64_t* x, std::int64_t* y, std::int64_t length) const {
    const std::uint64_t key = rng::stream_key("synthetic.tokens");
    const auto vocab = static_cast<std::uint32_t>(shape_.classes);
    std::int64_t token = philox::word(seed_, key, sample * (length + 1)) % vocab;
    for (std::int64_t t = 0; t < length; ++t) {
      x[t] = token;
      // next = (3 * token + small noise) mod vocab
      const std::uint32_t noise = philox::word(seed_, key, sample * (length + 1) + t + 1) % 4;
      token = (3 * token + noise) % vocab;
      y[t] = token;
    }
  }

  DataShape shape_;
  std::uint64_t seed_;
  std::int64_t offset_, size_;
  std::vector<float> prototypes_;
};

}  // namespace

void Dataset::read(std::span<const std::int64_t> indices, Tensor& inputs, Tensor& targets) const {
  const std::int64_t count = size();
  for (const std::int64_t i : indices)
    LOOM_CHECK(i >= 0 && i < count, name(), ": sample ", i, " out of range (", count, " samples)");
  const DataShape s = shape();
  const auto n = static_cast<std::int64_t>(indices.size());
  inputs = with_rows(n, s.sample_shape, s.input_dtype);
  targets = with_rows(n, s.target_shape, DType::i64);
  fill(indices, inputs, targets);
}

std::string fashion_mnist_dir() {
  const char* dir = std::getenv("LOOM_FASHION_MNIST_DIR");
  return dir && *dir ? dir : "/usr/share/datasets/fashion-mnist";
}

std::unique_ptr<Dataset> open_dataset(const std::string& spec, DatasetSplit split, const DataShape& expected,
                                      std::uint64_t seed) {
  if (expected.input_dtype == DType::i64 && expected.task != TokenTask::next)
    return with_token_task(open_dataset(spec, split, token_stream_shape(expected), seed), expected, split, seed);
  if (spec == "fashion-mnist") return std::make_unique<FashionMnist>(split, expected);
  if (spec == "synthetic") return std::make_unique<Synthetic>(split, expected, seed);
  if (spec.starts_with("text:")) {
    LOOM_CHECK(spec.size() > 5, "--data text:PATH needs a file path");
    return std::make_unique<TextBytes>(spec.substr(5), split, expected);
  }
  LOOM_THROW("unknown dataset '", spec, "' (expected fashion-mnist, text:PATH or synthetic)");
}

std::vector<std::int64_t> epoch_order(std::int64_t size, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(size));
  std::iota(order.begin(), order.end(), 0);
  const std::uint64_t key = rng::stream_key("epoch_order", static_cast<std::uint64_t>(epoch));
  for (std::int64_t i = size - 1; i > 0; --i) {  // Fisher-Yates with counter-based draws
    const std::uint64_t draw = (std::uint64_t{philox::word(seed, key, 2 * i)} << 32) | philox::word(seed, key, 2 * i + 1);
    std::swap(order[i], order[draw % static_cast<std::uint64_t>(i + 1)]);
  }
  return order;
}

}  // namespace loom
