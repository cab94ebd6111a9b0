// Which CPU implementation Conv2d runs for its settings and dtype: loom's Winograd F(2x2, 3x3)
// (winograd.h), loom's im2col + GEMM (im2col.h), or oneDNN (onednn_conv.h, f32 only, when built
// with it). The rule in conv_path.cpp follows what `loom bench layers` measured per shape
// (docs/layers.md). LOOM_CONV_PATH=im2col|winograd|onednn forces one path wherever it applies
// (benchmarks and tests compare the paths through it); elsewhere the rule decides.
#pragma once

#include <loom/core/dtype.h>
#include <loom/layers/conv2d.h>

namespace loom::detail {

enum class ConvPath { im2col, winograd, onednn };

ConvPath choose_conv_path(const Conv2dOptions& o, DType dtype);
const char* conv_path_name(ConvPath path);
// Whether the path's weight gradient rounds the input to ops::gemm_operand_dtype() (so an input
// saved in that type computes the same numbers): im2col (its GEMMs round), oneDNN where its
// primitives take bf16 operands; not Winograd (it computes in f32 under any scope).
bool conv_path_rounds_input(ConvPath path);

}  // namespace loom::detail
