// The operations of AmoebaNet cells (see amoeba_cell.h) as Sequentials of loom layers, named
// like torchgpipe's nn.Sequential children ("0", "1", ...). Internal to the layers module.
#pragma once

#include <loom/layers/amoeba_cell.h>
#include <loom/layers/window2d.h>

namespace loom::detail {

// relu-conv-bn from `in` to `out` channels (no conv bias).
LayerPtr relu_conv_bn(std::int64_t in, std::int64_t out, Size2 kernel = 1, Size2 stride = 1, Size2 padding = 0);

// One cell operation reading a state of `in` channels and giving `channels`; null for an identity.
LayerPtr amoeba_operation(AmoebaOpKind kind, std::int64_t in, std::int64_t channels, std::int64_t stride);

const char* amoeba_op_name(AmoebaOpKind kind);

}  // namespace loom::detail
