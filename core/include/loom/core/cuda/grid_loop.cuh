// The grid-stride loop of loom's element-wise kernels: i runs over [0, n) with every thread of the
// grid taking every (blocks x threads)-th index, so any grid size (blocks_for in context.h) covers n.
// Device code: include from .cu files only.
#pragma once

#include <cuda_runtime.h>

#define LOOM_GRID_LOOP(i, n)                                                                 \
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<long long>(blockDim.x) * gridDim.x)
