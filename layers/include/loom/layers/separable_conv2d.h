// SeparableConv2d as the NASNet/AmoebaNet search spaces use it: ReLU, a kxk DepthwiseConv2d
// (stride, padding k / 2), a 1x1 Conv2d from `in` to `out` channels, BatchNorm2d; no conv biases.
// Children are named like an nn.Sequential's ("1" depthwise, "2" pointwise, "3" bn), so a
// PyTorch state_dict of nn.Sequential(ReLU, Conv2d(groups=in), Conv2d, BatchNorm2d) maps one to one.
// AmoebaNet-D's genotype (amoeba_cell.h) has no separable convolutions; AmoebaNet-A's has.
// CPU only (the depthwise part): a CUDA tensor is a loom::Error naming the layer.
#pragma once

#include <loom/layers/sequential.h>
#include <loom/layers/window2d.h>

namespace loom {

struct SeparableConv2dOptions {
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t kernel = 3;  // odd: padding kernel / 2 keeps the size at stride 1
  std::int64_t stride = 1;
};

class SeparableConv2d : public Sequential {
 public:
  explicit SeparableConv2d(const SeparableConv2dOptions& options);
  std::string type() const override { return "SeparableConv2d"; }
  const SeparableConv2dOptions& options() const { return options_; }

 private:
  SeparableConv2dOptions options_;
};

}  // namespace loom
