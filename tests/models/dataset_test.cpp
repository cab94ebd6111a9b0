// Datasets: the real Fashion-MNIST files, byte-level text windows, deterministic synthetic data,
// seeded epoch order, and clear errors for bad files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <loom/core/philox.h>
#include <loom/core/rng.h>
#include <loom/models/dataset.h>

using namespace loom;

namespace {
const DataShape kImages{{1, 28, 28}, DType::f32, {}, 10};

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("loom_dataset_test_" + name)).string();
}
}  // namespace

TEST_CASE("Fashion-MNIST: 60000 + 10000 labelled 28x28 images", "[data]") {
  auto train = open_dataset("fashion-mnist", DatasetSplit::train, kImages, 1);
  auto test = open_dataset("fashion-mnist", DatasetSplit::test, kImages, 1);
  CHECK(train->size() == 60000);
  CHECK(test->size() == 10000);
  Tensor x, y;
  const std::vector<std::int64_t> rows{0, 1, 59999};
  train->read(rows, x, y);
  CHECK(x.shape() == Shape{3, 1, 28, 28});
  CHECK(y.shape() == Shape{3});
  // The first two training labels of Fashion-MNIST are 9 (ankle boot) and 0 (T-shirt/top).
  CHECK(y.data<std::int64_t>()[0] == 9);
  CHECK(y.data<std::int64_t>()[1] == 0);
  const auto v = x.to_float_vector();
  CHECK(*std::min_element(v.begin(), v.end()) == Approx((0 - 0.2860) / 0.3530).epsilon(1e-5));
  CHECK_THROWS_WITH(train->read(std::vector<std::int64_t>{60000}, x, y), Catch::Contains("out of range"));
}

TEST_CASE("bad IDX files give one clear error naming the file", "[data][errors]") {
  const std::string dir = temp_path("idx");
  std::filesystem::create_directories(dir);
  setenv("LOOM_FASHION_MNIST_DIR", dir.c_str(), 1);
  CHECK_THROWS_WITH(open_dataset("fashion-mnist", DatasetSplit::train, kImages, 1),
                    Catch::Contains(dir + "/train-images-idx3-ubyte.gz: cannot open"));
  {
    std::ofstream out(dir + "/train-images-idx3-ubyte.gz", std::ios::binary);
    const unsigned char header[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 28, 0, 0, 0, 28, 1, 2, 3};
    out.write(reinterpret_cast<const char*>(header), sizeof header);
  }
  CHECK_THROWS_WITH(open_dataset("fashion-mnist", DatasetSplit::train, kImages, 1),
                    Catch::Contains("train-images-idx3-ubyte.gz: expected 1568 data bytes after the header, found 3"));
  {
    std::ofstream out(dir + "/train-images-idx3-ubyte.gz", std::ios::binary);
    out << "hello world";
  }
  CHECK_THROWS_WITH(open_dataset("fashion-mnist", DatasetSplit::train, kImages, 1),
                    Catch::Contains("not an IDX file"));
  unsetenv("LOOM_FASHION_MNIST_DIR");
  std::filesystem::remove_all(dir);
  CHECK_THROWS_WITH(open_dataset("imagenet", DatasetSplit::train, kImages, 1),
                    Catch::Contains("unknown dataset 'imagenet'"));
  const DataShape tokens{{8}, DType::i64, {8}, 256};
  CHECK_THROWS_WITH(open_dataset("fashion-mnist", DatasetSplit::train, tokens, 1),
                    Catch::Contains("the model expects inputs [8] i64"));
}

TEST_CASE("text:PATH gives next-byte targets over non-overlapping windows", "[data]") {
  const std::string path = temp_path("text.txt");
  std::string text;
  for (int i = 0; i < 200; ++i) text += static_cast<char>('a' + i % 26);
  std::ofstream(path) << text;
  const DataShape tokens{{8}, DType::i64, {8}, 256};
  auto train = open_dataset("text:" + path, DatasetSplit::train, tokens, 1);
  auto test = open_dataset("text:" + path, DatasetSplit::test, tokens, 1);
  CHECK(train->size() + test->size() == (200 - 1) / 8);
  CHECK(test->size() == 2);
  Tensor x, y;
  train->read(std::vector<std::int64_t>{1}, x, y);
  for (int t = 0; t < 8; ++t) {
    CHECK(x.data<std::int64_t>()[t] == text[8 + t]);
    CHECK(y.data<std::int64_t>()[t] == text[9 + t]);
  }
  CHECK_THROWS_WITH(open_dataset("text:/nonexistent/file", DatasetSplit::train, tokens, 1),
                    Catch::Contains("/nonexistent/file: cannot open"));
  std::filesystem::remove(path);
}

TEST_CASE("synthetic data depends only on the seed and the sample index", "[data]") {
  const DataShape features{{16}, DType::f32, {}, 4};
  auto a = open_dataset("synthetic", DatasetSplit::train, features, 7);
  auto b = open_dataset("synthetic", DatasetSplit::train, features, 7);
  Tensor xa, ya, xb, yb;
  a->read(std::vector<std::int64_t>{5, 6, 7}, xa, ya);
  b->read(std::vector<std::int64_t>{7}, xb, yb);
  CHECK(xa.slice(2, 3).to_float_vector() == xb.to_float_vector());
  CHECK(ya.data<std::int64_t>()[2] == yb.data<std::int64_t>()[0]);
  // Labels use every class.
  Tensor x, y;
  std::vector<std::int64_t> all(200);
  std::iota(all.begin(), all.end(), 0);
  a->read(all, x, y);
  std::vector<int> counts(4);
  for (int i = 0; i < 200; ++i) counts[y.data<std::int64_t>()[i]]++;
  for (int c : counts) CHECK(c > 10);
}

TEST_CASE("synthetic features are element sample * features + f of the seed's normal stream", "[data]") {
  // An odd feature count, so that samples start on both halves of a Philox block (the generator
  // makes a pair of features from one block).
  for (std::int64_t features : {std::int64_t{7}, std::int64_t{16}}) {
    const DataShape shape{{features}, DType::f32, {}, 3};
    auto data = open_dataset("synthetic", DatasetSplit::train, shape, 11);
    Tensor x, y;
    data->read(std::vector<std::int64_t>{0, 1, 2, 5}, x, y);
    const std::uint64_t key = rng::stream_key("synthetic.inputs");
    const std::int64_t samples[] = {0, 1, 2, 5};
    for (std::int64_t r = 0; r < 4; ++r)
      for (std::int64_t f = 0; f < features; ++f)
        REQUIRE(x.data<float>()[r * features + f] ==
                philox::normal(11, key, static_cast<std::uint64_t>(samples[r] * features + f), 0.0f, 1.0f));
  }
}

TEST_CASE("epoch order is a seeded permutation", "[data]") {
  const auto order = epoch_order(1000, 3, 0);
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) REQUIRE(sorted[i] == i);
  CHECK(order == epoch_order(1000, 3, 0));
  CHECK(order != epoch_order(1000, 3, 1));
  CHECK(order != epoch_order(1000, 4, 0));
}

TEST_CASE("only regular data files are read; labels outside the classes are refused naming the file", "[data]") {
  const DataShape tokens{Shape{8}, DType::i64, Shape{8}, 256};
  CHECK_THROWS_WITH(open_dataset("text:/dev/zero", DatasetSplit::train, tokens, 1),
                    Catch::Contains("/dev/zero: a data file must be a regular file, but this is a device"));
  CHECK_THROWS_WITH(open_dataset("text:/tmp", DatasetSplit::train, tokens, 1), Catch::Contains("/tmp: a data file must be a regular file, but this is a directory"));
}
