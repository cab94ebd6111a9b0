// A tensor shape: up to 6 dimensions, stored inline (a shape is copied freely).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace loom {

class Shape {
 public:
  static constexpr int kMaxRank = 6;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(const std::vector<std::int64_t>& dims);

  int rank() const { return rank_; }
  std::int64_t operator[](int dim) const;  // negative dims count from the end
  std::int64_t& operator[](int dim);
  std::int64_t numel() const;
  std::vector<std::int64_t> vec() const { return {dims_.begin(), dims_.begin() + rank_}; }
  std::string str() const;  // "[2, 3, 4]"
  // Product of the dimensions before / from `dim` (the 2-D view [outer, inner] used by kernels).
  std::int64_t outer(int dim) const;
  std::int64_t inner(int dim) const;
  // Normalise a possibly negative dim; throws loom::Error when out of range.
  int axis(int dim) const;

  friend bool operator==(const Shape& a, const Shape& b);

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Shape& shape);

}  // namespace loom
