// Row-block copies on CPU and CUDA (see strided_copy.h).
#include "strided_copy.h"

#include <cstring>

#include "cuda/kernels.h"
#include "cuda/strided_copy.h"

namespace loom::detail {

void copy_rows(const Tensor& src, std::int64_t src_offset, std::int64_t src_pitch, Tensor& dst,
               std::int64_t dst_offset, std::int64_t dst_pitch, std::int64_t rows, std::int64_t width) {
  LOOM_CHECK(src.dtype() == dst.dtype() && src.device() == dst.device(), "copy_rows: ", src.str(0), " to ",
             dst.str(0));
  if (rows <= 0 || width <= 0) return;
  LOOM_CHECK(src_offset + (rows - 1) * src_pitch + width <= src.numel() &&
                 dst_offset + (rows - 1) * dst_pitch + width <= dst.numel(),
             "copy_rows: ", rows, " rows of ", width, " elements exceed ", src.shape().str(), " or ",
             dst.shape().str());
  const std::size_t element = src.element_size();
  const char* from = static_cast<const char*>(src.raw_data()) + src_offset * element;
  char* to = static_cast<char*>(dst.raw_data()) + dst_offset * element;
  if (src.device().is_cuda()) {
    cuda_kernels::copy_rows(from, src_pitch * element, to, dst_pitch * element, rows, width * element,
                            src.device().index);
    return;
  }
  if (src_pitch == width && dst_pitch == width) {
    std::memcpy(to, from, rows * width * element);
    return;
  }
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(to + r * dst_pitch * element, from + r * src_pitch * element, width * element);
}

Tensor swap_leading_dims(const Tensor& x) {
  LOOM_CHECK(x.rank() >= 2, "swap_leading_dims: rank ", x.rank(), " tensor ", x.shape().str());
  std::vector<std::int64_t> dims = x.shape().vec();
  const std::int64_t a = dims[0], b = dims[1];
  const std::int64_t rest = x.shape().inner(2);
  std::swap(dims[0], dims[1]);
  Tensor out = Tensor::empty(Shape(dims), x.dtype(), x.device());
  // Row i of x's block j ([a][b] order) goes to row j of block i: loop over the shorter side.
  if (a <= b) {
    for (std::int64_t i = 0; i < a; ++i) copy_rows(x, i * b * rest, rest, out, i * rest, a * rest, b, rest);
  } else {
    for (std::int64_t j = 0; j < b; ++j) copy_rows(x, j * rest, b * rest, out, j * a * rest, rest, a, rest);
  }
  return out;
}

}  // namespace loom::detail
