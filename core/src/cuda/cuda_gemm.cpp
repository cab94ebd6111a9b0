// CUDA matrix multiply through cuBLAS. loom tensors are row-major; cuBLAS is column-major, so
// c = op(a) op(b) is computed as c^T = op(b)^T op(a)^T with the operands swapped.
#include <loom/core/cuda/context.h>
#include <loom/base/error.h>
#include <loom/core/memory.h>

#include "backend.h"

namespace loom::cuda {

namespace {
cublasOperation_t op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

struct ColumnMajor {
  int m, n, k, lda, ldb, ldc;
};

// Leading dims of the row-major operands, seen by cuBLAS as the transposed column-major ones.
ColumnMajor column_major(const GemmShape& g) {
  return {static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k),
          static_cast<int>(g.transpose_b ? g.k : g.n), static_cast<int>(g.transpose_a ? g.m : g.k),
          static_cast<int>(g.n)};
}
}  // namespace

void gemm(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c) {
  if (g.m == 0 || g.n == 0) return;
  const int device = a.device().index;
  cublasHandle_t handle = cublas(device);
  const ColumnMajor cm = column_major(g);
  if (a.dtype() == DType::bf16) {  // tensor cores, f32 accumulation, one rounding to bf16 (ops.h)
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    LOOM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, op(g.transpose_b), op(g.transpose_a), cm.m, cm.n, cm.k, &alpha,
                                                 b.raw_data(), CUDA_R_16BF, std::max(cm.lda, 1), g.stride_b,
                                                 a.raw_data(), CUDA_R_16BF, std::max(cm.ldb, 1), g.stride_a, &beta,
                                                 c.raw_data(), CUDA_R_16BF, cm.ldc, g.stride_c,
                                                 static_cast<int>(g.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else if (a.dtype() == DType::f32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    LOOM_CUBLAS_CHECK(cublasSgemmStridedBatched(handle, op(g.transpose_b), op(g.transpose_a), cm.m, cm.n, cm.k, &alpha,
                                                b.data<float>(), std::max(cm.lda, 1), g.stride_b, a.data<float>(),
                                                std::max(cm.ldb, 1), g.stride_a, &beta, c.data<float>(), cm.ldc,
                                                g.stride_c, static_cast<int>(g.batch)));
  } else {
    LOOM_CUBLAS_CHECK(cublasDgemmStridedBatched(handle, op(g.transpose_b), op(g.transpose_a), cm.m, cm.n, cm.k,
                                                &g.alpha, b.data<double>(), std::max(cm.lda, 1), g.stride_b,
                                                a.data<double>(), std::max(cm.ldb, 1), g.stride_a, &g.beta,
                                                c.data<double>(), cm.ldc, g.stride_c, static_cast<int>(g.batch)));
  }
}

// f32 operands cast to bf16 or f16, cuBLAS's 16-bit x 16-bit -> f32 GEMM on tensor cores (ops.h,
// GemmOperandScope).
void gemm_rounded_operands(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c, DType operands) {
  if (g.m == 0 || g.n == 0) return;
  MemoryCategoryScope scratch(MemoryCategory::workspace);
  const cudaDataType_t type = operands == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  Tensor a16 = Tensor::empty(a.shape(), operands, a.device()), b16 = Tensor::empty(b.shape(), operands, b.device());
  cast(a, a16);
  cast(b, b16);
  const ColumnMajor cm = column_major(g);
  const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
  LOOM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(cublas(a.device().index), op(g.transpose_b), op(g.transpose_a), cm.m, cm.n,
                                               cm.k, &alpha, b16.raw_data(), type, std::max(cm.lda, 1), g.stride_b,
                                               a16.raw_data(), type, std::max(cm.ldb, 1), g.stride_a, &beta,
                                               c.raw_data(), CUDA_R_32F, cm.ldc, g.stride_c, static_cast<int>(g.batch),
                                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_pointers(const GemmShape& g, DType dtype, const std::vector<const void*>& a,
                   const std::vector<const void*>& b, const std::vector<void*>& c) {
  if (g.m == 0 || g.n == 0 || a.empty()) return;
  cudaPointerAttributes attributes{};
  LOOM_CUDA_CHECK(cudaPointerGetAttributes(&attributes, c[0]));
  const int device = attributes.device;
  cudaStream_t s = stream(device);
  // Pointer arrays live on the device: a, b, c back to back.
  const std::size_t count = a.size();
  std::vector<const void*> host(3 * count);
  for (std::size_t i = 0; i < count; ++i) {
    host[i] = b[i];  // swapped operands (column-major view)
    host[count + i] = a[i];
    host[2 * count + i] = c[i];
  }
  MemoryCategoryScope scope(MemoryCategory::workspace);
  Tensor pointers = Tensor::empty({static_cast<std::int64_t>(3 * count)}, DType::i64, Device::cuda(device));
  LOOM_CUDA_CHECK(cudaMemcpyAsync(pointers.raw_data(), host.data(), host.size() * sizeof(void*),
                                  cudaMemcpyHostToDevice, s));
  const ColumnMajor cm = column_major(g);
  auto** device_ptrs = static_cast<void**>(pointers.raw_data());
  if (dtype == DType::f32) {
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    LOOM_CUBLAS_CHECK(cublasSgemmBatched(cublas(device), op(g.transpose_b), op(g.transpose_a), cm.m, cm.n, cm.k, &alpha,
                                         reinterpret_cast<const float* const*>(device_ptrs), std::max(cm.lda, 1),
                                         reinterpret_cast<const float* const*>(device_ptrs + count), std::max(cm.ldb, 1),
                                         &beta, reinterpret_cast<float* const*>(device_ptrs + 2 * count), cm.ldc,
                                         static_cast<int>(count)));
  } else {
    LOOM_CUBLAS_CHECK(cublasDgemmBatched(cublas(device), op(g.transpose_b), op(g.transpose_a), cm.m, cm.n, cm.k,
                                         &g.alpha, reinterpret_cast<const double* const*>(device_ptrs),
                                         std::max(cm.lda, 1), reinterpret_cast<const double* const*>(device_ptrs + count),
                                         std::max(cm.ldb, 1), &g.beta,
                                         reinterpret_cast<double* const*>(device_ptrs + 2 * count), cm.ldc,
                                         static_cast<int>(count)));
  }
  synchronize(device);  // the pointer array must outlive the call
}

}  // namespace loom::cuda
