// Conv2d through oneDNN (see onednn_conv.h). Each call takes its primitive from a cache keyed by
// its shapes, moves the operands into the layouts the primitive chose, runs it, and moves the
// result back into loom's NCHW tensor.
#include "cpu/onednn_conv.h"

#include "cpu/blocked_layout.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <loom/core/bounded_cache.h>
#include <loom/base/error.h>
#include <loom/core/ops.h>
#include <loom/core/threads.h>

namespace loom::detail::onednn {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

// The logical [N, C, H, W] of an NCHW or a blocked (blocked_layout.h) tensor.
memory::dims dims_of(const Tensor& t) {
  const Shape s = blocked::logical_shape(t.shape());
  return {s[0], s[1], s[2], s[3]};
}

memory::desc any_desc(const memory::dims& dims, memory::data_type type = memory::data_type::f32) {
  return {dims, type, Tag::any};
}

// The type the primitives multiply in: bf16 under GemmOperandScope(bf16) where the CPU has bf16
// kernels (the reorders from loom's f32 tensors round to nearest even, as ops::round_to_ does), else
// f32. Results and gradients stay f32 either way.
memory::data_type operand_type() { return bf16_operands() ? memory::data_type::bf16 : memory::data_type::f32; }

// Weight [O, C/G, kh, kw] as oneDNN sees it: with groups, [G, O/G, C/G, kh, kw].
memory::dims weight_dims(const Tensor& w, const Conv2dOptions& o) {
  if (o.groups == 1) return dims_of(w);
  return {o.groups, w.size(0) / o.groups, w.size(1), w.size(2), w.size(3)};
}

memory user_memory(const Tensor& t, const memory::dims& dims) {
  const Tag tag = dims.size() == 5      ? Tag::goihw
                  : blocked::is_blocked(t) ? Tag::nChw16c
                  : dims.size() == 4     ? Tag::nchw
                                         : Tag::x;
  return {{dims, memory::data_type::f32, tag}, engine(), t.raw_data()};
}

// Strides, oneDNN's dilation (PyTorch's minus one) and PyTorch's symmetric padding.
struct Window {
  memory::dims strides, dilates, padding;
};

Window window(const Conv2dOptions& o) {
  return {{o.stride.h, o.stride.w}, {o.dilation.h - 1, o.dilation.w - 1}, {o.padding.h, o.padding.w}};
}

// `user` itself when the primitive wants its layout, else a workspace buffer in the wanted layout
// (filled from `user` when `fill`).
memory in_layout(memory user, const memory::desc& wanted, Tensor& storage, dnnl::stream& stream, bool fill) {
  if (wanted == user.get_desc()) return user;
  storage = Tensor::empty({static_cast<std::int64_t>((wanted.get_size() + 3) / 4)}, DType::f32);
  memory staged(wanted, engine(), storage.raw_data());
  if (fill) dnnl::reorder(user, staged).execute(stream, user, staged);
  return staged;
}

memory scratchpad(const memory::desc& desc, Tensor& storage) {
  storage = Tensor::empty({static_cast<std::int64_t>(desc.get_size() / 4 + 1)}, DType::f32);
  return {desc, engine(), storage.raw_data()};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc forward_desc(const memory::dims& x, const memory::dims& w,
                                                       const memory::dims& y, bool bias, const Conv2dOptions& o,
                                                       memory::data_type type) {
  const Window win = window(o);
  const auto kind = dnnl::prop_kind::forward_training;
  const auto direct = dnnl::algorithm::convolution_direct;
  const memory::desc bias_desc({y[1]}, memory::data_type::f32, Tag::x);
  const auto desc = bias ? dnnl::convolution_forward::desc(kind, direct, any_desc(x, type), any_desc(w, type), bias_desc,
                                                           any_desc(y), win.strides, win.dilates, win.padding, win.padding)
                         : dnnl::convolution_forward::desc(kind, direct, any_desc(x, type), any_desc(w, type), any_desc(y),
                                                           win.strides, win.dilates, win.padding, win.padding);
  return {desc, user_scratchpad(), engine()};
}

// Primitives by shape. Building a primitive descriptor and finding its kernel in oneDNN's own
// cache costs tens of microseconds, which a small convolution would pay five times per forward +
// backward (three primitives, two forward hints). Entries are handles (cheap copies).
template <typename Entry>
using PrimitiveCache = BoundedCache<Entry>;

// Every dimension and setting a primitive depends on.
std::string cache_key(const memory::dims& x, const memory::dims& w, const memory::dims& y, bool bias,
                      const Conv2dOptions& o, memory::data_type type) {
  std::string key = std::string(bias ? "b" : "-") + (type == memory::data_type::bf16 ? "h" : "f");
  for (const memory::dims* dims : {&x, &w, &y}) {
    for (memory::dim d : *dims) key += std::to_string(d) + ",";
    key += ";";
  }
  for (std::int64_t v : {o.stride.h, o.stride.w, o.padding.h, o.padding.w, o.dilation.h, o.dilation.w, o.groups})
    key += std::to_string(v) + ",";
  return key;
}

template <typename Pd, typename Primitive>
struct Cached {
  Pd pd;
  Primitive primitive;
};

dnnl::convolution_backward_weights::primitive_desc backward_weights_desc(const memory::dims& x, const memory::dims& w,
                                                                          const memory::dims& y, bool bias,
                                                                          const Conv2dOptions& o,
                                                                          memory::data_type type) {
  const Window win = window(o);
  const auto direct = dnnl::algorithm::convolution_direct;
  const memory::desc bias_desc({y[1]}, memory::data_type::f32, Tag::x);
  const auto desc = bias ? dnnl::convolution_backward_weights::desc(direct, any_desc(x, type), any_desc(w), bias_desc,
                                                                    any_desc(y, type), win.strides, win.dilates,
                                                                    win.padding, win.padding)
                         : dnnl::convolution_backward_weights::desc(direct, any_desc(x, type), any_desc(w),
                                                                    any_desc(y, type), win.strides, win.dilates,
                                                                    win.padding, win.padding);
  return {desc, user_scratchpad(), engine(), forward_desc(x, w, y, bias, o, type)};
}

void check_f32(const Tensor& t, const char* what) {
  LOOM_CHECK(t.dtype() == DType::f32 && !t.device().is_cuda(), "Conv2d (oneDNN): ", what, " must be an f32 tensor in host memory (cpu or sim)");
}

}  // namespace

bool available() { return true; }

bool bf16_operands() { return ops::gemm_operand_dtype() == DType::bf16 && ops::cpu_bf16_kernels(); }

void convolve(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y, const Conv2dOptions& o) {
  check_f32(x, "input");
  omp_set_num_threads(num_threads());
  const memory::dims wd = weight_dims(weight, o);
  using Forward = Cached<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>;
  static PrimitiveCache<Forward> cache;
  const memory::data_type type = operand_type();
  const Forward forward = cache.get(cache_key(dims_of(x), wd, dims_of(y), bias.defined(), o, type), [&] {
    const auto pd = forward_desc(dims_of(x), wd, dims_of(y), bias.defined(), o, type);
    return Forward{pd, dnnl::convolution_forward(pd)};
  });
  const auto& pd = forward.pd;
  dnnl::stream stream(engine());
  Tensor src_storage, weight_storage, dst_storage, pad_storage;
  memory user_y = user_memory(y, dims_of(y));
  memory src = in_layout(user_memory(x, dims_of(x)), pd.src_desc(), src_storage, stream, true);
  memory weights = in_layout(user_memory(weight, wd), pd.weights_desc(), weight_storage, stream, true);
  memory dst = in_layout(user_y, pd.dst_desc(), dst_storage, stream, false);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc(), pad_storage)}};
  if (bias.defined()) args.emplace(DNNL_ARG_BIAS, user_memory(bias, {bias.numel()}));
  forward.primitive.execute(stream, args);
  if (dst != user_y) dnnl::reorder(dst, user_y).execute(stream, dst, user_y);
  stream.wait();
}

void input_gradient(const Tensor& grad_y, const Tensor& weight, Tensor& grad_x, const Conv2dOptions& o) {
  check_f32(grad_y, "output gradient");
  omp_set_num_threads(num_threads());
  const memory::dims wd = weight_dims(weight, o), xd = dims_of(grad_x), yd = dims_of(grad_y);
  using BackwardData = Cached<dnnl::convolution_backward_data::primitive_desc, dnnl::convolution_backward_data>;
  static PrimitiveCache<BackwardData> cache;
  const memory::data_type type = operand_type();
  const BackwardData backward = cache.get(cache_key(xd, wd, yd, false, o, type), [&] {
    const Window win = window(o);
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, any_desc(xd),
                                                     any_desc(wd, type), any_desc(yd, type), win.strides,
                                                     win.dilates, win.padding, win.padding);
    const dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), engine(),
                                                             forward_desc(xd, wd, yd, false, o, type));
    return BackwardData{pd, dnnl::convolution_backward_data(pd)};
  });
  const auto& pd = backward.pd;
  dnnl::stream stream(engine());
  Tensor dy_storage, weight_storage, dx_storage, pad_storage;
  memory user_dx = user_memory(grad_x, xd);
  memory diff_dst = in_layout(user_memory(grad_y, yd), pd.diff_dst_desc(), dy_storage, stream, true);
  memory weights = in_layout(user_memory(weight, wd), pd.weights_desc(), weight_storage, stream, true);
  memory diff_src = in_layout(user_dx, pd.diff_src_desc(), dx_storage, stream, false);
  backward.primitive.execute(
      stream, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, diff_src},
               {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc(), pad_storage)}});
  if (diff_src != user_dx) dnnl::reorder(diff_src, user_dx).execute(stream, diff_src, user_dx);
  stream.wait();
}

void accumulate_weight_gradient(const Tensor& x, const Tensor& grad_y, Tensor& weight_grad, Tensor& bias_grad,
                                const Conv2dOptions& o) {
  check_f32(x, "input");
  omp_set_num_threads(num_threads());
  const memory::dims wd = weight_dims(weight_grad, o), xd = dims_of(x), yd = dims_of(grad_y);
  const bool bias = bias_grad.defined();
  using BackwardWeights =
      Cached<dnnl::convolution_backward_weights::primitive_desc, dnnl::convolution_backward_weights>;
  static PrimitiveCache<BackwardWeights> cache;
  const memory::data_type type = operand_type();
  const BackwardWeights backward = cache.get(cache_key(xd, wd, yd, bias, o, type), [&] {
    const auto pd = backward_weights_desc(xd, wd, yd, bias, o, type);
    return BackwardWeights{pd, dnnl::convolution_backward_weights(pd)};
  });
  const auto& pd = backward.pd;
  dnnl::stream stream(engine());
  Tensor x_storage, dy_storage, dw_storage, pad_storage;
  memory src = in_layout(user_memory(x, xd), pd.src_desc(), x_storage, stream, true);
  memory diff_dst = in_layout(user_memory(grad_y, yd), pd.diff_dst_desc(), dy_storage, stream, true);
  dw_storage = Tensor::empty({static_cast<std::int64_t>((pd.diff_weights_desc().get_size() + 3) / 4)}, DType::f32);
  memory diff_weights(pd.diff_weights_desc(), engine(), dw_storage.raw_data());
  Tensor db = bias ? Tensor::empty({yd[1]}, DType::f32) : Tensor();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst},
                                       {DNNL_ARG_DIFF_WEIGHTS, diff_weights},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc(), pad_storage)}};
  if (bias) args.emplace(DNNL_ARG_DIFF_BIAS, user_memory(db, {yd[1]}));
  backward.primitive.execute(stream, args);
  // weight_grad += diff_weights: a reorder into loom's layout with a sum post-op.
  dnnl::post_ops accumulate;
  accumulate.append_sum(1.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(accumulate);
  memory user_dw = user_memory(weight_grad, wd);
  dnnl::reorder(dnnl::reorder::primitive_desc(diff_weights, user_dw, attr)).execute(stream, diff_weights, user_dw);
  stream.wait();
  if (bias) {
    float* out = bias_grad.data<float>();
    const float* add = db.data<float>();
    for (std::int64_t c = 0; c < yd[1]; ++c) out[c] += add[c];
  }
}

}  // namespace loom::detail::onednn

namespace loom::detail::blocked {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;

Tensor reordered(const Tensor& x, const Shape& to) {
  LOOM_CHECK(x.dtype() == DType::f32 && !x.device().is_cuda(), "blocked layout: f32 host tensors only, got ",
             x.shape().str());
  Tensor y = Tensor::empty(to, x.dtype(), x.device());
  omp_set_num_threads(num_threads());
  const Shape s = logical_shape(x.shape());
  const memory::dims dims{s[0], s[1], s[2], s[3]};
  const auto tag_of = [](const Tensor& t) { return is_blocked(t) ? Tag::nChw16c : Tag::nchw; };
  memory source({dims, memory::data_type::f32, tag_of(x)}, onednn::engine(), x.raw_data());
  memory target({dims, memory::data_type::f32, tag_of(y)}, onednn::engine(), y.raw_data());
  dnnl::stream stream(onednn::engine());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return y;
}

// The NCHW tensors to_nchw made, each with the blocked tensor it came from, while the NCHW one
// lives (its storage held weakly): to_blocked of such a tensor is that blocked tensor, with no
// reorder and no second copy. Safe because nothing writes into a block's output or input gradient
// after to_nchw made it (the boundary rounding of bf16/fp16 runs writes in place, but those runs
// never take the blocked layout: their operands are 16-bit).
struct Twin {
  std::weak_ptr<Storage> nchw;
  std::int64_t offset;
  Shape shape;
  Tensor blocked;
};

struct Twins {
  std::mutex mutex;
  std::vector<Twin> entries;

  void prune() {
    std::erase_if(entries, [](const Twin& t) { return t.nchw.expired(); });
  }
};

Twins& twins() {
  static Twins* t = new Twins;  // never destroyed: tensors may die after static destruction began
  return *t;
}

}  // namespace

bool enabled() {
  const char* value = std::getenv("LOOM_CPU_BLOCKED");
  return value == nullptr || std::string_view(value) != "0";
}

Tensor to_blocked(const Tensor& x) {
  LOOM_CHECK(x.rank() == 4 && x.size(1) % kLanes == 0, "blocked layout: needs [N, C, H, W] with C a multiple of ",
             kLanes, ", got ", x.shape().str());
  {
    Twins& t = twins();
    std::lock_guard lock(t.mutex);
    t.prune();
    for (const Twin& twin : t.entries)
      if (twin.nchw.lock() == x.storage() && twin.offset == x.offset() && twin.shape == x.shape()) return twin.blocked;
  }
  return reordered(x, blocked_shape(x.shape()));
}

Tensor to_nchw(const Tensor& x) {
  LOOM_CHECK(is_blocked(x), "blocked layout: not a blocked tensor: ", x.shape().str());
  Tensor y = reordered(x, logical_shape(x.shape()));
  Twins& t = twins();
  std::lock_guard lock(t.mutex);
  t.prune();
  t.entries.push_back({y.storage(), y.offset(), y.shape(), x});
  return y;
}

}  // namespace loom::detail::blocked
