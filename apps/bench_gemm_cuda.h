// `loom bench gemm --device cuda`: loom's GEMM on a GPU next to cuBLAS called directly.
#pragma once

#include <loom/core/dtype.h>

namespace loom::apps {

// f32 (cublasSgemm, no TF32) or bf16 (cublasGemmEx, f32 accumulation) on GPU 0: loom's ops::gemm
// and a direct cuBLAS call on the same buffers, TFLOP/s of each, their ratio, and the fraction of
// the device's peak for the dtype (peak_tflops, or the H100/H200/A100 table when 0). Errors when
// the build has no CUDA backend or no GPU is visible.
void bench_gemm_cuda(bool json, DType dtype, int repeats, double peak_tflops);

}  // namespace loom::apps
