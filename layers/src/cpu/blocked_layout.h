// oneDNN's nChw16c layout as loom tensors. An activation [N, C, H, W] whose channel count is a
// multiple of 16 may be held as a rank-5 tensor [N, C/16, H, W, 16]: channel c of pixel (h, w) at
// [n, c / 16, h, w, c % 16], the layout oneDNN's f32 AVX-512 convolutions compute in. ResNetBottleneck
// works in it from its input to its output ReLU, so its convolutions read and write it without the
// reorders an NCHW tensor costs them on every call (two per forward, four per backward, each a full
// pass over an activation). Conv2d (oneDNN path), BatchNorm2d, the activations and ops::add take
// such tensors; a convolution's input gradient follows its output gradient's layout. Nothing else
// does: blocks still hand each other NCHW tensors, but an NCHW tensor made by to_nchw remembers its
// blocked twin while it lives, and to_blocked of it returns that twin, so a run of bottlenecks
// reorders once per block and direction and keeps one copy of each boundary activation. Without
// oneDNN nothing is blocked.
#pragma once

#include <cstdint>

#include <loom/core/shape.h>
#include <loom/core/tensor.h>

namespace loom::detail::blocked {

constexpr std::int64_t kLanes = 16;

inline bool is_blocked(const Shape& s) { return s.rank() == 5 && s[4] == kLanes; }
inline bool is_blocked(const Tensor& t) { return is_blocked(t.shape()); }

// [N, C, H, W] of a blocked shape; any other shape as it is.
inline Shape logical_shape(const Shape& s) {
  return is_blocked(s) ? Shape{s[0], s[1] * kLanes, s[2], s[3]} : s;
}

// The blocked shape of [N, C, H, W] (C a multiple of 16).
inline Shape blocked_shape(const Shape& nchw) { return {nchw[0], nchw[1] / kLanes, nchw[2], nchw[3], kLanes}; }

// Whether layers may use the layout: built with oneDNN, and LOOM_CPU_BLOCKED is not 0 (tests and
// benchmarks compare the NCHW path through it).
bool enabled();

// x [N, C, H, W] -> [N, C/16, H, W, 16] and back (oneDNN reorders, over loom's threads). to_nchw's
// result must not be written to while it lives (its twin would go stale); to_blocked of it is the
// tensor to_nchw was given.
Tensor to_blocked(const Tensor& x);
Tensor to_nchw(const Tensor& x);

}  // namespace loom::detail::blocked
