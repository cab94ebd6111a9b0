#include <loom/core/shape.h>

#include <sstream>

#include <loom/base/error.h>

namespace loom {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(const std::vector<std::int64_t>& dims) {
  LOOM_CHECK(dims.size() <= static_cast<std::size_t>(kMaxRank), "shape of rank ", dims.size(),
             " exceeds the maximum rank ", kMaxRank);
  rank_ = static_cast<int>(dims.size());
  for (int i = 0; i < rank_; ++i) {
    LOOM_CHECK(dims[i] >= 0 || dims[i] == -1, "negative dimension ", dims[i], " in shape");
    dims_[i] = dims[i];
  }
}

int Shape::axis(int dim) const {
  const int d = dim < 0 ? dim + rank_ : dim;
  LOOM_CHECK(d >= 0 && d < rank_, "dimension ", dim, " out of range for shape ", str());
  return d;
}

std::int64_t Shape::operator[](int dim) const { return dims_[axis(dim)]; }
std::int64_t& Shape::operator[](int dim) { return dims_[axis(dim)]; }

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

std::int64_t Shape::outer(int dim) const {
  const int d = dim == rank_ ? rank_ : axis(dim);
  std::int64_t n = 1;
  for (int i = 0; i < d; ++i) n *= dims_[i];
  return n;
}

std::int64_t Shape::inner(int dim) const {
  const int d = dim == rank_ ? rank_ : axis(dim);
  std::int64_t n = 1;
  for (int i = d; i < rank_; ++i) n *= dims_[i];
  return n;
}

std::string Shape::str() const {
  std::ostringstream out;
  out << "[";
  for (int i = 0; i < rank_; ++i) out << (i ? ", " : "") << dims_[i];
  out << "]";
  return out.str();
}

bool operator==(const Shape& a, const Shape& b) {
  if (a.rank_ != b.rank_) return false;
  for (int i = 0; i < a.rank_; ++i)
    if (a.dims_[i] != b.dims_[i]) return false;
  return true;
}

std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape.str(); }

}  // namespace loom
