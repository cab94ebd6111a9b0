// A build without oneDNN (see onednn_conv.h): Conv2d never chooses this path.
#include "cpu/onednn_conv.h"

#include "cpu/blocked_layout.h"

#include <loom/base/error.h>

namespace loom::detail::onednn {

bool available() { return false; }
bool bf16_operands() { return false; }

void convolve(const Tensor&, const Tensor&, const Tensor&, Tensor&, const Conv2dOptions&) {
  LOOM_THROW("Conv2d: this loom was built without oneDNN");
}

void input_gradient(const Tensor&, const Tensor&, Tensor&, const Conv2dOptions&) {
  LOOM_THROW("Conv2d: this loom was built without oneDNN");
}

void accumulate_weight_gradient(const Tensor&, const Tensor&, Tensor&, Tensor&, const Conv2dOptions&) {
  LOOM_THROW("Conv2d: this loom was built without oneDNN");
}

}  // namespace loom::detail::onednn

namespace loom::detail::blocked {

bool enabled() { return false; }
Tensor to_blocked(const Tensor&) { LOOM_THROW("blocked layout: this loom was built without oneDNN"); }
Tensor to_nchw(const Tensor&) { LOOM_THROW("blocked layout: this loom was built without oneDNN"); }

}  // namespace loom::detail::blocked
