// Trains a multi-layer perceptron on Fashion-MNIST with loom's layer library alone — the way a
// researcher embeds loom in their own code: build a model from layers, run forward and backward
// with a Context per batch, step an optimizer. No MPI, no loom executable.
//
//   fashion_mnist_mlp [DATA_DIR] [EPOCHS]     (DATA_DIR holds the gzipped IDX files)
// Exits 0 when the test accuracy reaches 88%, 1 below that, 2 on bad input.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <loom/base/error.h>
#include <loom/core/threads.h>
#include <loom/core/timer.h>
#include <loom/layers/activation.h>
#include <loom/layers/linear.h>
#include <loom/layers/loss.h>
#include <loom/layers/optimizer.h>
#include <loom/layers/sequential.h>

namespace {

struct Dataset {
  std::vector<float> images;  // [n, 784], normalised
  std::vector<std::int64_t> labels;
  std::int64_t size = 0;
};

std::vector<unsigned char> read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  LOOM_CHECK(file != nullptr, path, ": cannot open");
  std::vector<unsigned char> data;
  unsigned char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(file, buffer, sizeof buffer)) > 0) data.insert(data.end(), buffer, buffer + n);
  const bool failed = n < 0;
  gzclose(file);
  LOOM_CHECK(!failed, path, ": gzip read error");
  return data;
}

std::uint32_t big_endian(const std::vector<unsigned char>& d, std::size_t at) {
  return (std::uint32_t(d[at]) << 24) | (std::uint32_t(d[at + 1]) << 16) | (std::uint32_t(d[at + 2]) << 8) | d[at + 3];
}

// IDX files: magic 0x00000803 (images: count, rows, cols) or 0x00000801 (labels: count).
Dataset load(const std::string& dir, const std::string& split) {
  const std::string image_path = dir + "/" + split + "-images-idx3-ubyte.gz";
  const std::string label_path = dir + "/" + split + "-labels-idx1-ubyte.gz";
  const auto images = read_gzip(image_path);
  const auto labels = read_gzip(label_path);
  LOOM_CHECK(images.size() >= 16 && big_endian(images, 0) == 0x803, image_path, ": not an IDX image file");
  LOOM_CHECK(labels.size() >= 8 && big_endian(labels, 0) == 0x801, label_path, ": not an IDX label file");
  Dataset ds;
  ds.size = big_endian(images, 4);
  const std::size_t pixels = std::size_t(big_endian(images, 8)) * big_endian(images, 12);
  LOOM_CHECK(pixels == 784, image_path, ": images are not 28x28");
  LOOM_CHECK(big_endian(labels, 4) == ds.size, label_path, ": ", big_endian(labels, 4), " labels for ", ds.size, " images");
  LOOM_CHECK(images.size() == 16 + ds.size * pixels, image_path, ": truncated (", images.size(), " bytes)");
  LOOM_CHECK(labels.size() == 8 + std::size_t(ds.size), label_path, ": truncated");
  constexpr float mean = 0.2860f, stddev = 0.3530f;  // Fashion-MNIST training-set statistics
  ds.images.resize(ds.size * pixels);
  for (std::size_t i = 0; i < ds.images.size(); ++i) ds.images[i] = (images[16 + i] / 255.0f - mean) / stddev;
  ds.labels.assign(labels.begin() + 8, labels.end());
  return ds;
}

// Rows `order[begin, end)` of the dataset as a batch.
std::pair<loom::Tensor, loom::Tensor> batch(const Dataset& ds, const std::vector<std::int64_t>& order, std::size_t begin,
                                            std::size_t end) {
  const auto n = static_cast<std::int64_t>(end - begin);
  loom::Tensor x = loom::Tensor::empty({n, 784});
  loom::Tensor y = loom::Tensor::empty({n}, loom::DType::i64);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t row = order[begin + std::size_t(i)];
    std::memcpy(x.data<float>() + i * 784, ds.images.data() + row * 784, 784 * sizeof(float));
    y.data<std::int64_t>()[i] = ds.labels[std::size_t(row)];
  }
  return {x, y};
}

double accuracy(loom::Sequential& model, const Dataset& ds) {
  std::vector<std::int64_t> order(std::size_t(ds.size));
  std::iota(order.begin(), order.end(), 0);
  std::int64_t correct = 0;
  for (std::size_t begin = 0; begin < order.size(); begin += 1000) {
    const std::size_t end = std::min(order.size(), begin + 1000);
    auto [x, y] = batch(ds, order, begin, end);
    loom::Context ctx;
    ctx.training = false;
    const loom::Tensor logits = model.forward({x}, ctx)[0];
    const float* p = logits.data<float>();
    for (std::int64_t i = 0; i < x.size(0); ++i) {
      const float* row = p + i * 10;
      correct += std::max_element(row, row + 10) - row == y.data<std::int64_t>()[i];
    }
  }
  return double(correct) / double(ds.size);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 10;
  try {
    loom::set_num_threads(loom::default_num_threads());
    const Dataset train = load(dir, "train"), test = load(dir, "t10k");
    std::printf("Fashion-MNIST: %lld training and %lld test images, %d thread(s)\n", (long long)train.size,
                (long long)test.size, loom::num_threads());

    loom::Sequential model;
    model.add(std::make_unique<loom::Linear>(784, 512), "fc1");
    model.add(std::make_unique<loom::ReLU>(), "relu1");
    model.add(std::make_unique<loom::Linear>(512, 256), "fc2");
    model.add(std::make_unique<loom::ReLU>(), "relu2");
    model.add(std::make_unique<loom::Linear>(256, 10), "fc3");
    model.initialize(/*seed=*/1, /*block_index=*/0);
    loom::Adam optimizer(model.parameters(), loom::AdamOptions{});
    loom::LrSchedule schedule;
    schedule.kind = loom::LrSchedule::Kind::cosine;
    schedule.base_lr = 1e-3;
    schedule.min_lr = 1e-5;
    const std::size_t batch_size = 128;
    const std::int64_t steps_per_epoch = (train.size + std::int64_t(batch_size) - 1) / std::int64_t(batch_size);
    schedule.total_steps = steps_per_epoch * epochs;
    loom::CrossEntropyLoss loss;

    std::vector<std::int64_t> order(std::size_t(train.size));
    std::iota(order.begin(), order.end(), 0);
    std::mt19937 shuffle_rng(7);
    const loom::Tensor one = loom::Tensor::full({}, 1.0);
    double test_accuracy = 0.0;
    std::int64_t step = 0;
    for (int epoch = 0; epoch < epochs; ++epoch) {
      loom::Stopwatch watch;
      std::shuffle(order.begin(), order.end(), shuffle_rng);
      double loss_sum = 0.0;
      for (std::size_t begin = 0; begin < order.size(); begin += batch_size, ++step) {
        auto [x, y] = batch(train, order, begin, std::min(order.size(), begin + batch_size));
        loom::Context ctx, loss_ctx;
        ctx.step = std::uint64_t(step);
        optimizer.zero_grad();
        const loom::Tensor logits = model.forward({x}, ctx)[0];
        loss_sum += loss.forward({logits, y}, loss_ctx)[0].item();
        model.backward({loss.backward({one}, loss_ctx)[0]}, ctx);
        optimizer.step(schedule.at(step));
      }
      test_accuracy = accuracy(model, test);
      std::printf("epoch %2d  loss %.4f  test accuracy %.2f%%  (%.1f s)\n", epoch + 1, loss_sum / steps_per_epoch,
                  100.0 * test_accuracy, watch.elapsed_ms() / 1000.0);
      std::fflush(stdout);
    }
    const bool reached = test_accuracy >= 0.88;
    std::printf("final test accuracy %.2f%% (%s 88%%)\n", 100.0 * test_accuracy, reached ? "reached" : "BELOW");
    return reached ? 0 : 1;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "fashion_mnist_mlp: %s\n", e.what());
    return 2;
  }
}
