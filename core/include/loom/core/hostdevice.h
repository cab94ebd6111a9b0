// LOOM_HD marks functions compiled for both the host and CUDA devices (math written once).
#pragma once
#if defined(__CUDACC__)
#define LOOM_HD __host__ __device__ __forceinline__
#else
#define LOOM_HD inline
#endif
