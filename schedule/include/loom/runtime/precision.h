// Training precision (`loom train --precision fp32|bf16`, TrainerConfig::precision).
//
// fp32: every tensor is f32 and nothing is rounded (the default; unchanged bit for bit).
// bf16: compute in bf16 with fp32 master weights and fp32 accumulation, the usual mixed-precision
// recipe, with the values bf16 but the storage f32:
//   - the optimizer updates fp32 master weights (MasterWeights); the layers compute with the
//     parameters rounded to bf16, written after every optimizer step and at start and resume;
//   - the inputs and outputs of every block (so every stage-boundary tensor), the gradient of the
//     loss and the gradients that leave every block backwards are rounded to bf16 in place
//     (StageRunner), as a GPU kernel storing its result in bf16 would;
//   - every GEMM of the blocks' forward and backward (linear layers, attention, LSTM gates) takes
//     its operands rounded to bf16 and accumulates in f32 into an f32 result (ops::Bf16GemmScope,
//     set by StageRunner): cuBLAS's bf16 tensor-core GEMM on a GPU, rounded copies and an f32 GEMM
//     on the CPU; convolutions stay f32 (cuDNN's FMA math on a GPU, as on the CPU);
//   - parameter gradients accumulate in fp32; the loss, its reductions and the optimizer are fp32.
// A product of two bf16 values is exact in f32 (8 + 8 significand bits fit in 24), so an f32 GEMM
// on bf16-rounded operands is a bf16 GEMM with f32 accumulation: the CPU computes what bf16
// tensor cores do, up to the order of the f32 sums, which is why CPU tests prove the numerics.
// Between GEMMs inside a block (softmax, GELU, layer norm) values stay f32.
#pragma once

#include <loom/layers/layer.h>

#include <string>

namespace loom::runtime {

enum class Precision : unsigned char { fp32, bf16 };

// "fp32" or "bf16"; anything else is a loom::Error naming --precision.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision precision);

// Rounds the f32 tensors of a list to bf16 in place (ops::round_to_bf16_);
// others are left alone (integer token ids, undefined gradients of inputs that
// have none).
void round_to_bf16_(const TensorList& tensors);

// What crosses a stage boundary. Under bf16 every f32 boundary tensor already holds bf16 values
// (rounded at each block boundary), so it travels as a bf16 tensor: half the bytes on the link,
// nothing lost; the receiver widens it back to f32. fp32 sends the tensors as they are. Tensors of
// other dtypes (token ids) and undefined ones pass through. Charged to the current category.
TensorList to_boundary(const TensorList& tensors, Precision precision);
TensorList from_boundary(const TensorList& tensors, Precision precision);

}  // namespace loom::runtime
