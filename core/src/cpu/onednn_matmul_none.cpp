// Built without oneDNN: bf16 GEMMs stay emulated, repeated f32 GEMMs go through OpenBLAS (onednn_matmul.h).
#include "cpu/onednn_matmul.h"

#include <loom/base/error.h>

namespace loom::cpu::onednn {

bool bf16_matmul_supported() { return false; }

void matmul_bf16(const GemmShape&, const std::uint16_t*, const std::uint16_t*, float*) {
  LOOM_THROW("bf16 matmul: this build of loom has no oneDNN");
}

struct PackedRight {};

std::shared_ptr<const PackedRight> pack_right_f32(const GemmShape&, const float*) { return nullptr; }

void matmul_packed_f32(const PackedRight&, const float*, float*) {
  LOOM_THROW("packed f32 matmul: this build of loom has no oneDNN");
}

}  // namespace loom::cpu::onednn
