// Element-wise reduction on host buffers for the MPI backend's own algorithms: dst += src and
// data *= factor. Fixed order per element, so results are deterministic.
#pragma once

#include <cstdint>

#include <loom/core/dtype.h>

namespace loom::comm::detail {

void accumulate(void* dst, const void* src, std::int64_t count, DType dtype);
void scale(void* data, std::int64_t count, DType dtype, double factor);
// Checks that a dtype can be reduced by loom::comm (f32, f64, i32, i64) and returns its size.
std::size_t reducible_size(DType dtype);

}  // namespace loom::comm::detail
