// Tensor as a value type: views share storage, copies do not, devices and shapes are checked.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/core/tensor.h>

using namespace loom;

TEST_CASE("slice along dim 0 is a view of the same storage", "[tensor]") {
  Tensor t = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3});
  Tensor rows = t.slice(1, 3);
  CHECK(rows.shape() == Shape{2, 3});
  CHECK(rows.same_storage(t));
  CHECK(rows.offset() == 3);
  CHECK(rows.data<float>()[0] == 3.0f);
  rows.data<float>()[0] = 42.0f;  // writes through to the parent
  CHECK(t.data<float>()[3] == 42.0f);
  Tensor empty = t.slice(2, 2);
  CHECK(empty.numel() == 0);
  CHECK_THROWS_WITH(t.slice(3, 5), Catch::Contains("out of range"));
  CHECK_THROWS_AS(t.slice(2, 1), Error);
}

TEST_CASE("reshape is a view; clone is a copy", "[tensor]") {
  Tensor t = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor r = t.reshape({3, -1});
  CHECK(r.shape() == Shape{3, 2});
  CHECK(r.same_storage(t));
  CHECK(t.flatten_to_2d(1).shape() == Shape{2, 3});
  CHECK_THROWS_WITH(t.reshape({4, 2}), Catch::Contains("cannot reshape"));
  CHECK_THROWS_WITH(t.reshape({-1, -1}), Catch::Contains("more than one -1"));
  Tensor c = t.clone();
  CHECK_FALSE(c.same_storage(t));
  c.data<double>()[0] = -1;
  CHECK(t.data<double>()[0] == 1);
  CHECK(c.to_double_vector() == std::vector<double>{-1, 2, 3, 4, 5, 6});
}

TEST_CASE("clone of a slice copies only the slice", "[tensor]") {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor c = t.slice(1, 2).clone();
  CHECK(c.shape() == Shape{1, 2});
  CHECK(c.to_float_vector() == std::vector<float>{3, 4});
}

TEST_CASE("typed access checks the dtype; shapes of rank above 6 are refused", "[tensor]") {
  Tensor t = Tensor::zeros({2}, DType::f32);
  CHECK_THROWS_WITH(t.data<double>(), Catch::Contains("accessed as f64"));
  CHECK_THROWS_WITH(Shape({1, 1, 1, 1, 1, 1, 1}), Catch::Contains("maximum rank 6"));
  CHECK(Shape({1, 2, 3, 4, 5, 6}).numel() == 720);
  CHECK_THROWS_WITH(Tensor().raw_data(), Catch::Contains("undefined tensor"));
}

TEST_CASE("printing is readable", "[tensor]") {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  CHECK(t.str(3) == "Tensor f32 cpu [2, 5] {1, 2, 3, ...}");
  CHECK(Tensor::from_vector<std::int64_t>({7}, {1}).str() == "Tensor i64 cpu [1] {7}");
  CHECK(Tensor().str() == "Tensor(undefined)");
}

TEST_CASE("devices: parsing and clear errors for CUDA in a CPU-only build", "[tensor][device]") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
  CHECK(Device::cuda(1).str() == "cuda:1");
  CHECK_THROWS_WITH(Device::parse("gpu0"), Catch::Contains("bad device 'gpu0'"));
  CHECK_THROWS_AS(Device::parse("cuda:-1"), Error);
  if (!cuda_compiled()) {
    CHECK_THROWS_WITH(Tensor::empty({2}, DType::f32, Device::cuda(0)), Catch::Contains("no CUDA backend"));
    Tensor t = Tensor::zeros({2});
    CHECK_THROWS_WITH(t.to(Device::cuda(0)), Catch::Contains("no CUDA backend"));
  }
  Tensor t = Tensor::zeros({2});
  CHECK(t.to(Device::cpu()).same_storage(t));  // same device: no copy
}

TEST_CASE("item and full", "[tensor]") {
  CHECK(Tensor::full({1}, 2.5, DType::f64).item() == 2.5);
  CHECK_THROWS_WITH(Tensor::zeros({2}).item(), Catch::Contains("item() of a tensor with 2 elements"));
  CHECK(Tensor::full({3}, 7, DType::i32).to_double_vector() == std::vector<double>{7, 7, 7});
}
