// Column sums of a rows x width matrix on the GPU in two passes, for the gradients that reduce
// over rows (a bias, LayerNorm's gamma and beta). One thread per column over every row leaves the
// GPU nearly idle when there are few columns (768 columns: 3 blocks of 256 threads on 132 SMs).
// Pass 1 cuts the rows into chunks and sums each (chunk, column) in parallel, in double; pass 2
// adds each column's partials in chunk order. The additions' order depends only on (rows, width),
// so a run reproduces itself. Device code: include from .cu files only.
#pragma once

#include <algorithm>

#include <cuda_runtime.h>

#include <loom/core/cuda/grid_loop.cuh>
#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/tensor.h>

namespace loom::cuda {

// The chunks the rows are cut into: about 64k threads in all, at least 16 rows a chunk.
inline long long column_chunks(long long rows, long long width) {
  const long long for_threads = (65536 + width - 1) / width;
  return std::max(1LL, std::min({for_threads, (rows + 15) / 16, 65535LL}));
}

// partials[chunk * width + j] = sum of term(r, j) over the chunk's rows.
template <typename Term>
__global__ void column_partials_kernel(Term term, long long rows, long long width, long long chunk_rows,
                                       double* partials) {
  const long long j = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (j >= width) return;
  const long long begin = blockIdx.y * chunk_rows;
  const long long end = begin + chunk_rows < rows ? begin + chunk_rows : rows;
  double total = 0;
  for (long long r = begin; r < end; ++r) total += term(r, j);
  partials[blockIdx.y * width + j] = total;
}

// out[j] += the partials of column j, in chunk order.
template <typename T>
__global__ void add_column_partials_kernel(const double* partials, long long chunks, long long width, T* out) {
  LOOM_GRID_LOOP(j, width) {
    double total = 0;
    for (long long c = 0; c < chunks; ++c) total += partials[c * width + j];
    out[j] += static_cast<T>(total);
  }
}

// out[j] += sum over rows r of term(r, j), queued on `stream` (of `device`); term is a functor
// with a __device__ double operator()(long long row, long long column) const.
template <typename T, typename Term>
void add_column_sums(const Term& term, long long rows, long long width, T* out, Device device, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  const long long chunk_rows = (rows + column_chunks(rows, width) - 1) / column_chunks(rows, width);
  const long long chunks = (rows + chunk_rows - 1) / chunk_rows;
  const MemoryCategoryScope scope(MemoryCategory::workspace);
  Tensor partials = Tensor::empty({chunks * width}, DType::f64, device);  // reused only after these kernels: one stream
  constexpr unsigned int threads = 256;
  const auto column_blocks = static_cast<unsigned int>((width + threads - 1) / threads);
  column_partials_kernel<<<dim3(column_blocks, static_cast<unsigned int>(chunks)), threads, 0, stream>>>(
      term, rows, width, chunk_rows, partials.data<double>());
  add_column_partials_kernel<<<column_blocks, threads, 0, stream>>>(partials.data<double>(), chunks, width, out);
  LOOM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace loom::cuda
