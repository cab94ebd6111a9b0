// Training precision (`loom train --precision fp32|bf16|fp16`, TrainerConfig::precision).
//
// fp32: every tensor is f32 and nothing is rounded (the default; unchanged bit for bit).
// bf16 and fp16: compute in 16 bits with fp32 master weights and fp32 accumulation, the usual
// mixed-precision recipe, with the values 16-bit but the storage f32:
//   - the optimizer updates fp32 master weights (MasterWeights); the layers compute with the
//     parameters rounded to 16 bits, written after every optimizer step and at start and resume;
//   - the inputs and outputs of every block (so every stage-boundary tensor), the gradient of the
//     loss and the gradients that leave every block backwards are rounded in place (StageRunner),
//     as a GPU kernel storing its result in 16 bits would; boundary tensors cross stages as 16-bit
//     tensors (to_boundary / from_boundary);
//   - every GEMM of the blocks' forward and backward (linear layers, attention, LSTM gates) takes
//     its operands rounded to 16 bits and accumulates in f32 into an f32 result
//     (ops::GemmOperandScope, set by StageRunner): cuBLAS's bf16 / f16 tensor-core GEMM on a GPU,
//     oneDNN's bf16 kernels on a CPU with AVX-512 BF16 (ops::cpu_bf16_kernels), rounded copies and
//     an f32 GEMM on other CPUs and for f16; convolutions stay f32 (cuDNN's FMA math on a GPU, as on
//     the CPU); the activations saved only for those GEMMs (a Linear's input, attention's Q, K, V)
//     are kept in 16 bits (layers/src/gemm_operand_storage.h);
//   - parameter gradients accumulate in fp32; the loss, its reductions and the optimizer are fp32.
// A product of two bf16 (or two f16) values is exact in f32 (8 + 8, 11 + 11 significand bits fit
// in 24), so an f32 GEMM on rounded operands is a 16-bit GEMM with f32 accumulation: the CPU
// computes what tensor cores do, up to the order of the f32 sums, which is why CPU tests prove the
// numerics. Between GEMMs inside a block (softmax, GELU, layer norm) values stay f32.
// fp16 has bf16's range cut to 65504 and its smallest normal at 6.1e-5, so small gradients vanish
// and large ones overflow: fp16 scales the loss (loss_scaler.h) and needs a synchronous schedule.
#pragma once

#include <loom/layers/layer.h>
#include <loom/runtime/loss_scaler.h>

#include <string>

namespace loom::runtime {

enum class Precision : unsigned char { fp32, bf16, fp16 };

// A run's precision (--precision) and, for fp16, its loss scaling (--loss-scale, --loss-scale-window).
struct PrecisionConfig {
  Precision precision = Precision::fp32;
  LossScalerOptions loss_scaler;  // fp16
};

// "fp32", "bf16" or "fp16"; anything else is a loom::Error naming --precision.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision precision);

// The dtype a precision's values have: f32, bf16 or f16.
DType value_dtype(Precision precision);

// Rounds the f32 tensors of a list in place to the precision's values (ops::round_to_; nothing for
// fp32); others are left alone (integer token ids, undefined gradients of inputs that have none).
void round_to_precision_(const TensorList& tensors, Precision precision);

// What crosses a stage boundary. Under bf16 or fp16 every f32 boundary tensor already holds 16-bit
// values (rounded at each block boundary), so it travels as a bf16 / f16 tensor: half the bytes on
// the link, nothing lost; the receiver widens it back to f32. fp32 sends the tensors as they are.
// Tensors of other dtypes (token ids) and undefined ones pass through. Charged to the current
// category.
TensorList to_boundary(const TensorList& tensors, Precision precision);
TensorList from_boundary(const TensorList& tensors, Precision precision);

}  // namespace loom::runtime
