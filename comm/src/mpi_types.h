// The MPI datatype of a loom dtype, and the int count MPI calls take.
#pragma once

#include <climits>
#include <cstdint>

#include <mpi.h>

#include <loom/core/dtype.h>
#include <loom/base/error.h>

namespace loom::comm::detail {

inline MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::i64: return MPI_INT64_T;
    case DType::bf16:
    case DType::f16: return MPI_UINT16_T;  // moved, never reduced
  }
  return MPI_BYTE;
}

inline int mpi_count(std::int64_t count) {
  LOOM_CHECK(count >= 0 && count <= INT_MAX, "MPI message of ", count, " elements exceeds MPI's int count");
  return static_cast<int>(count);
}

}  // namespace loom::comm::detail
