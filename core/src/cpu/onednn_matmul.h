// bf16 GEMMs on the CPU through oneDNN's matmul (the library PyTorch's CPU bf16 matmul calls): bf16
// operands, products summed in f32 (AVX-512 BF16's vdpbf16ps), an f32 result. Used by cpu_gemm.cpp
// where the CPU has AVX-512 BF16; elsewhere the bf16 GEMMs stay emulated (f32 copies of the bf16
// values, an f32 GEMM), which computes the same numbers up to the order of the f32 sums. Built from
// onednn_matmul.cpp when CMake finds oneDNN, else from onednn_matmul_none.cpp (never supported).
#pragma once

#include <cstdint>
#include <memory>

#include "backend.h"

namespace loom::cpu::onednn {

// oneDNN is built in and its effective ISA (ONEDNN_MAX_CPU_ISA caps it) includes AVX-512 BF16.
bool bf16_matmul_supported();

// c = alpha op(a) op(b) + beta c for g's shape, batch and strides: a and b bf16 bit patterns, c f32.
// Scratch memory comes from loom's allocator (MemoryCategory::workspace); oneDNN's OpenMP threads
// are set to loom::num_threads() for the call.
void matmul_bf16(const GemmShape& g, const std::uint16_t* a, const std::uint16_t* b, float* c);

// f32 products a op(b) of many a with one b (ops::RepeatedGemm): b reordered once into the layout
// oneDNN's f32 matmul for g's shape asks for (its own storage, MemoryCategory::workspace), so the
// products do not pack b again on every call as OpenBLAS does. Null where this build has no oneDNN.
struct PackedRight;
std::shared_ptr<const PackedRight> pack_right_f32(const GemmShape& g, const float* b);
// c = a op(b) + g.beta c for the g given to pack_right_f32; a row-major m x k, c row-major m x n.
void matmul_packed_f32(const PackedRight& packed, const float* a, float* c);

}  // namespace loom::cpu::onednn
