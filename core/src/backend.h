// Private: the per-device backends behind the one dispatch seam (ops.cpp, memory.cpp, rng.cpp).
// cpu:: is always compiled; cuda:: only when LOOM_WITH_CUDA. Arguments are validated by the seam.
#pragma once

#include <memory>

#include <cstdint>
#include <vector>

#include <loom/core/tensor.h>

namespace loom {

struct GemmShape {
  bool transpose_a = false, transpose_b = false;
  std::int64_t m = 0, n = 0, k = 0;  // op(a) is m×k, op(b) is k×n, c is m×n
  std::int64_t batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch items
  double alpha = 1.0, beta = 0.0;
};

enum class RandomKind { uniform, normal, bernoulli };

#define LOOM_BACKEND_FUNCTIONS                                                                       \
  void gemm(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c);                         \
  void gemm_rounded_operands(const GemmShape& g, const Tensor& a, const Tensor& b, Tensor& c, DType operands); \
  void gemm_pointers(const GemmShape& g, DType dtype, const std::vector<const void*>& a,               \
                     const std::vector<const void*>& b, const std::vector<void*>& c);                 \
  void fill(Tensor& out, double value);                                                              \
  void cast(const Tensor& source, Tensor& out);                                                      \
  void binary(char op, const Tensor& a, const Tensor& b, Tensor& out);                               \
  void add_scaled(const Tensor& a, double alpha, const Tensor& b, double beta, Tensor& out);         \
  void scale(Tensor& x, double alpha);                                                               \
  void round_to(Tensor& x, DType storage);                                                           \
  double dot(const Tensor& a, const Tensor& b);                                                      \
  void add_dot(const Tensor& a, const Tensor& b, Tensor& total);                                     \
  void bias_add(Tensor& x, const Tensor& bias);                                                      \
  void bias_grad(const Tensor& grad, Tensor& grad_bias);                                             \
  void reduce(char op, const Tensor& x, std::int64_t outer, std::int64_t length, std::int64_t inner, \
              Tensor& out, Tensor* indices);                                                         \
  void softmax(const Tensor& x, Tensor& out, bool log);                                              \
  void softmax_backward(const Tensor& y, const Tensor& grad_y, Tensor& grad_x);                      \
  void random(RandomKind kind, Tensor& out, std::uint64_t seed, std::uint64_t key, double p0,        \
              double p1, std::uint64_t first_index);

namespace cpu {
LOOM_BACKEND_FUNCTIONS
// out[i] = storage(source[i]) in f32 storage (storage bf16 or f16), for `count` floats (source ==
// out allowed).
void round_to(const float* source, float* out, std::int64_t count, DType storage);
// bf16 GEMMs on oneDNN's bf16 kernels (ops.h cpu_bf16_kernels): possible on this CPU, in use, set.
bool bf16_kernels_supported();
bool bf16_kernels();
void use_bf16_kernels(bool use);
// ops::RepeatedGemm's CPU side (cpu_gemm.cpp): b (f32) reordered once into oneDNN's matmul layout for
// g's shape (null where this build has no oneDNN), then c = a op(b) + g.beta c on it (a, c contiguous).
std::shared_ptr<const void> pack_gemm_right(const GemmShape& g, const Tensor& b);
void gemm_packed_right(const void* packed, const Tensor& a, Tensor& c);
// Host allocator caching large blocks (cpu_memory.cpp): returns (pointer, rounded block size);
// new_system_allocation set on a miss. deallocate and release_cache return the bytes given back
// to the system.
void* allocate(std::size_t bytes, std::size_t& block_bytes, bool& new_system_allocation);
std::int64_t deallocate(void* data, std::size_t bytes);
std::int64_t release_cache();
}  // namespace cpu

// The sim device's allocator (sim/sim_memory.cpp): aligned host memory of its own, filled with
// 0xff bytes (NaN in every float dtype) so that a read of memory nobody wrote shows. allocate
// returns nullptr when the device is full (LOOM_SIM_MEMORY_MB; unset: as much as the host has);
// deallocate returns the block's bytes.
namespace sim {
void* allocate(std::size_t bytes, std::size_t& block_bytes);
std::int64_t deallocate(void* data, std::size_t bytes);
std::int64_t capacity_bytes();  // 0: unlimited
std::int64_t held_bytes();
}  // namespace sim

#ifdef LOOM_WITH_CUDA
namespace cuda {
LOOM_BACKEND_FUNCTIONS
// Caching allocator: returns (pointer, rounded block size); new_system_allocation set on a miss;
// nullptr when the device is out of memory even after the cache was released.
void* allocate(int device, std::size_t bytes, std::size_t& block_bytes, bool& new_system_allocation);
// cudaMemGetInfo of the device: the bytes free and in all.
void memory_info(int device, std::int64_t& free_bytes, std::int64_t& total_bytes);
void deallocate(int device, void* data, std::size_t block_bytes);
std::int64_t release_cache(int device);  // bytes returned to the driver
// Copies between any combination of host and device memory on the device's loom stream; returns
// at once when `wait` is false (the caller knows the source stays valid: device memory, or a
// pinned host block), after the copy otherwise.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes, bool wait);
// Page-locked host memory (cuda_pinned.cpp): as allocate, and the bytes given back to the system.
void* allocate_pinned(std::size_t bytes, std::size_t& block_bytes, bool& new_system_allocation);
std::int64_t deallocate_pinned(void* data, std::size_t bytes);
std::int64_t release_pinned_cache();
}  // namespace cuda
#endif

}  // namespace loom
