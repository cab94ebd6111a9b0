// After a kernel fault (a sticky CUDA error: every later CUDA call of the process fails), freeing
// tensors must not end the process from a destructor, and the error the user sees names the fault.
// The fault is a cuBLAS GEMM on addresses that are not device memory. Its own executable: the
// CUDA context is unusable afterwards. Skipped (77) without a GPU.
#include <catch2/catch.hpp>

#include <loom/core/memory.h>
#include <loom/core/tensor.h>

#ifdef LOOM_WITH_CUDA
#include <loom/core/cuda/context.h>
#endif

#include "skip_without_gpu.h"

using namespace loom;

namespace {
const test::SkipWithoutGpu skip_without_gpu_at_start;
}

TEST_CASE("freeing tensors after a kernel fault neither throws nor hides the fault", "[cuda][gpu]") {
#ifdef LOOM_WITH_CUDA
  const Device gpu = Device::cuda(0);
  Tensor on_gpu = Tensor::zeros({1 << 16}, DType::f32, gpu);
  Tensor pinned;
  {
    const PinnedHostScope staging(gpu);
    pinned = Tensor::zeros({1 << 16});
    REQUIRE(pinned.is_pinned());
  }
  on_gpu.copy_from(pinned);  // queued: its fence is recorded when `pinned` is freed below
  const float one = 1, zero = 0;
  auto* nowhere = reinterpret_cast<float*>(std::uintptr_t{0x1000});
  REQUIRE(cublasSgemm(cuda::cublas(0), CUBLAS_OP_N, CUBLAS_OP_N, 256, 256, 256, &one, nowhere, 256, nowhere, 256, &zero,
                      nowhere, 256) == CUBLAS_STATUS_SUCCESS);
  const cudaError_t fault = cudaStreamSynchronize(cuda::stream(0));
  REQUIRE(fault != cudaSuccess);
  pinned = Tensor();  // a throw from here on would std::terminate the test
  on_gpu = Tensor();
  CHECK_THROWS_WITH(Tensor::zeros({4}, DType::f32, gpu).to_float_vector(),
                    Catch::Contains(cudaGetErrorString(fault)));
#endif
}
