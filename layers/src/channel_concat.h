// Concatenation and split of NCHW tensors along the channel dim (dim 1), on the tensors' device
// through copy_rows: the multi-branch blocks (AmoebaNet cells, FactorizedReduce) join their
// branches with it and split the output gradient back. Internal to the layers module.
#pragma once

#include <cstdint>
#include <vector>

#include <loom/core/tensor.h>

namespace loom::detail {

// [N, C_0 + C_1 + ..., H, W] from [N, C_i, H, W] (same N, H, W, dtype and device; checked).
Tensor concat_channels(const std::vector<Tensor>& parts);

// The inverse: copies of channels [c_0, c_0 + C_0), ... of x, one per entry of `channels`
// (which must add up to x's channel count).
std::vector<Tensor> split_channels(const Tensor& x, const std::vector<std::int64_t>& channels);

}  // namespace loom::detail
