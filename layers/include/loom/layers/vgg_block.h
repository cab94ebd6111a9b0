// VGG convolution block: `convs` times (3x3 convolution with padding 1 and bias, optional
// BatchNorm, ReLU), then 2x2 max pooling with stride 2 — one stage of torchvision's VGG
// "features". Children are named conv0, bn0, relu0, conv1, ..., pool.
#pragma once

#include <loom/layers/sequential.h>

namespace loom {

struct VggBlockOptions {
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t convs = 2;
  bool batch_norm = false;
};

class VggBlock : public Sequential {
 public:
  explicit VggBlock(const VggBlockOptions& options);
  std::string type() const override { return "VGGBlock"; }
  const VggBlockOptions& options() const { return options_; }

 private:
  VggBlockOptions options_;
};

}  // namespace loom
