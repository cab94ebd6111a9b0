// A ReLU's backward needs only where its output was positive: one bit per element, 32 elements to a
// 32-bit word (bit i % 32 of word i / 32). Under a 16-bit GemmOperandScope a ReLU on the CPU keeps
// this instead of its f32 output, so the layer after it (a convolution, a Linear) holds the output
// alone and can save it rounded (gemm_operand_storage.h). The backward computes what the f32 one
// does: g where y > 0, else 0 (NaN compares false either way).
#pragma once

#include <cstdint>

namespace loom::detail::relu_mask {

constexpr std::int64_t kBitsPerWord = 32;

inline std::int64_t words(std::int64_t elements) { return (elements + kBitsPerWord - 1) / kBitsPerWord; }

// mask[0, words(n)) = the bits of y[0, n) > 0 (a last word's unused bits zero).
void pack_positive(const float* y, std::uint32_t* mask, std::int64_t n);

// dx[i] = g[i] where bit i of mask is set, else 0, for i in [0, n).
void select(const std::uint32_t* mask, const float* g, float* dx, std::int64_t n);

}  // namespace loom::detail::relu_mask
