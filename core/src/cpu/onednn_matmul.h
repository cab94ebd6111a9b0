// bf16 GEMMs on the CPU through oneDNN's matmul (the library PyTorch's CPU bf16 matmul calls): bf16
// operands, products summed in f32 (AVX-512 BF16's vdpbf16ps), an f32 result. Used by cpu_gemm.cpp
// where the CPU has AVX-512 BF16; elsewhere the bf16 GEMMs stay emulated (f32 copies of the bf16
// values, an f32 GEMM), which computes the same numbers up to the order of the f32 sums. Built from
// onednn_matmul.cpp when CMake finds oneDNN, else from onednn_matmul_none.cpp (never supported).
#pragma once

#include <cstdint>

#include "backend.h"

namespace loom::cpu::onednn {

// oneDNN is built in and its effective ISA (ONEDNN_MAX_CPU_ISA caps it) includes AVX-512 BF16.
bool bf16_matmul_supported();

// c = alpha op(a) op(b) + beta c for g's shape, batch and strides: a and b bf16 bit patterns, c f32.
// Scratch memory comes from loom's allocator (MemoryCategory::workspace); oneDNN's OpenMP threads
// are set to loom::num_threads() for the call.
void matmul_bf16(const GemmShape& g, const std::uint16_t* a, const std::uint16_t* b, float* c);

}  // namespace loom::cpu::onednn
