// Multi-head attention (see attention.h). Heads are laid out [B*H, T, D] so every product is one
// strided-batched GEMM through loom::ops:
//   scores = q k^T / sqrt(D)      P = masked softmax(scores)      ctx = dropout(P) v
// Backward:
//   dPd = dctx v^T   dv = dropout(P)^T dctx   dS = softmax'(P, dropout'(dPd)) / sqrt(D)
//   dq = dS k        dk = dS^T q
#include <loom/layers/attention.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <Eigen/Core>

#include <loom/core/ops.h>
#include <loom/core/parallel.h>
#include <loom/core/rng.h>
#include <loom/layers/dropout.h>

#include "cuda/kernels.h"
#include "gemm_operand_storage.h"
#include "layer_util.h"

namespace loom {

namespace {

// dst [B, H, T, D] <- columns [offset, offset + H*D) of src [B, T, W].
template <typename T>
void cpu_split_heads(const T* src, T* dst, std::int64_t B, std::int64_t Tn, std::int64_t W, std::int64_t offset,
                     std::int64_t H, std::int64_t D) {
  parallel_for(B * H, std::max<std::int64_t>(1, 16384 / (Tn * D)), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t bh = first; bh < last; ++bh) {
      const std::int64_t b = bh / H, h = bh % H;
      for (std::int64_t t = 0; t < Tn; ++t)
        std::memcpy(dst + (bh * Tn + t) * D, src + (b * Tn + t) * W + offset + h * D, sizeof(T) * D);
    }
  });
}

// columns [offset, offset + H*D) of dst [B, T, W] <- src [B, H, T, D].
template <typename T>
void cpu_merge_heads(const T* src, T* dst, std::int64_t B, std::int64_t Tn, std::int64_t W, std::int64_t offset,
                     std::int64_t H, std::int64_t D) {
  parallel_for(B * H, std::max<std::int64_t>(1, 16384 / (Tn * D)), [&](std::int64_t first, std::int64_t last) {
    for (std::int64_t bh = first; bh < last; ++bh) {
      const std::int64_t b = bh / H, h = bh % H;
      for (std::int64_t t = 0; t < Tn; ++t)
        std::memcpy(dst + (b * Tn + t) * W + offset + h * D, src + (bh * Tn + t) * D, sizeof(T) * D);
    }
  });
}

// In place over scores [B*H, T, S]: masked softmax; masked entries and all-masked rows become 0.
// GCC 12 reports Eigen's AVX-512 intrinsics as maybe-uninitialised: a false positive, silenced here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <typename T>
void cpu_masked_softmax(T* scores, const T* key_padding, std::int64_t B, std::int64_t H, std::int64_t Tn,
                        std::int64_t S, bool causal) {
  parallel_for(B * H * Tn, std::max<std::int64_t>(1, 8192 / S), [&](std::int64_t first, std::int64_t last) {
      for (std::int64_t row_index = first; row_index < last; ++row_index) {
        const std::int64_t b = row_index / (H * Tn), i = row_index % Tn;
        T* row = scores + row_index * S;
        const T* pad = key_padding ? key_padding + b * S : nullptr;
        const std::int64_t limit = causal ? std::min(S, i + 1) : S;
        if (pad == nullptr && limit > 0) {  // the common case, in SIMD registers through Eigen
          Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> kept(row, limit);
          kept = (kept - kept.maxCoeff()).exp();
          kept *= T(1) / kept.sum();
          std::fill(row + limit, row + S, T(0));
          continue;
        }
        T m = -std::numeric_limits<T>::infinity();
        for (std::int64_t j = 0; j < limit; ++j)
          if (!pad || pad[j] == T(0)) m = std::max(m, row[j]);
        if (m == -std::numeric_limits<T>::infinity()) {
          for (std::int64_t j = 0; j < S; ++j) row[j] = T(0);
          continue;
        }
        T sum = 0;
        for (std::int64_t j = 0; j < S; ++j) {
          const bool keep = j < limit && (!pad || pad[j] == T(0));
          row[j] = keep ? std::exp(row[j] - m) : T(0);
          sum += row[j];
        }
        const T inv = T(1) / sum;
        for (std::int64_t j = 0; j < S; ++j) row[j] *= inv;
      }
  });
}
#pragma GCC diagnostic pop

void split_heads(const Tensor& src, std::int64_t offset, std::int64_t H, Tensor& dst) {
  const std::int64_t B = src.size(0), Tn = src.size(1), W = src.size(2), D = dst.size(2);
  if (src.device().is_cuda()) return cuda_kernels::split_heads(src, offset, H, dst);
  dispatch_floating(src.dtype(), "attention", [&]<typename T>(T) {
    cpu_split_heads<T>(src.data<T>(), dst.data<T>(), B, Tn, W, offset, H, D);
  });
}

void merge_heads(const Tensor& src, std::int64_t offset, std::int64_t H, Tensor& dst) {
  const std::int64_t B = dst.size(0), Tn = dst.size(1), W = dst.size(2), D = src.size(2);
  if (src.device().is_cuda()) return cuda_kernels::merge_heads(src, offset, H, dst);
  dispatch_floating(src.dtype(), "attention", [&]<typename T>(T) {
    cpu_merge_heads<T>(src.data<T>(), dst.data<T>(), B, Tn, W, offset, H, D);
  });
}

void masked_softmax(Tensor& scores, const Tensor& key_padding, std::int64_t B, std::int64_t H, bool causal) {
  if (scores.device().is_cuda()) return cuda_kernels::masked_softmax(scores, key_padding, B, H, causal);
  const std::int64_t Tn = scores.size(1), S = scores.size(2);
  dispatch_floating(scores.dtype(), "attention", [&]<typename T>(T) {
    cpu_masked_softmax<T>(scores.data<T>(), key_padding.defined() ? key_padding.data<T>() : nullptr, B, H, Tn, S,
                          causal);
  });
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t embed_dim, std::int64_t num_heads, bool cross, bool causal,
                                       double dropout, bool bias)
    : embed_dim_(embed_dim), num_heads_(num_heads), cross_(cross), causal_(causal), dropout_(dropout) {
  LOOM_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0, "MultiHeadAttention: embed_dim ", embed_dim,
             " must be a positive multiple of num_heads ", num_heads);
  LOOM_CHECK(dropout >= 0.0 && dropout < 1.0, "MultiHeadAttention: dropout must be in [0, 1), got ", dropout);
  head_dim_ = embed_dim / num_heads;
  // PyTorch: xavier_uniform_ over the packed [3E, E] in_proj_weight, zero in_proj_bias.
  const Init packed = Init::xavier_uniform(embed_dim, 3 * embed_dim);
  if (cross) {
    in_ = std::make_unique<Linear>(embed_dim, embed_dim, bias);
    kv_ = std::make_unique<Linear>(embed_dim, 2 * embed_dim, bias);
    kv_->set_init(packed, Init::zeros());
  } else {
    in_ = std::make_unique<Linear>(embed_dim, 3 * embed_dim, bias);
  }
  in_->set_init(packed, Init::zeros());
  out_ = std::make_unique<Linear>(embed_dim, embed_dim, bias);
  out_->set_init(Init::fan_in_uniform(embed_dim), Init::zeros());
}

std::vector<std::pair<std::string, Layer*>> MultiHeadAttention::children() {
  if (cross_) return {{"q", in_.get()}, {"kv", kv_.get()}, {"out", out_.get()}};
  return {{"qkv", in_.get()}, {"out", out_.get()}};
}

TensorList MultiHeadAttention::forward(const TensorList& inputs, Context& ctx) {
  const std::size_t tensors = cross_ ? 2 : 1;
  LOOM_CHECK(inputs.size() == tensors || inputs.size() == tensors + 1, describe(), ": expected ", tensors,
             " input(s) and an optional key padding mask, got ", inputs.size());
  const Tensor& x = inputs[0];
  const Tensor& memory = cross_ ? inputs[1] : inputs[0];
  LOOM_CHECK(x.rank() == 3 && x.size(2) == embed_dim_, describe(), ": input shape ", x.shape().str(),
             " is not [batch, length, ", embed_dim_, "]");
  LOOM_CHECK(memory.rank() == 3 && memory.size(0) == x.size(0) && memory.size(2) == embed_dim_, describe(),
             ": memory shape ", memory.shape().str(), " does not match input shape ", x.shape().str());
  const std::int64_t B = x.size(0), Tn = x.size(1), S = memory.size(1), H = num_heads_, D = head_dim_;

  Tensor key_padding;
  if (inputs.size() == tensors + 1 && inputs.back().defined()) {
    const Tensor& mask = inputs.back();
    LOOM_CHECK(mask.shape() == (Shape{B, S}), describe(), ": key padding mask shape ", mask.shape().str(),
               ", expected ", Shape{B, S}.str());
    key_padding = Tensor::empty(mask.shape(), x.dtype(), x.device());
    ops::cast(mask.device() == x.device() ? mask : mask.to(x.device()), key_padding);
  }

  Tensor q = Tensor::empty(Shape{B * H, Tn, D}, x.dtype(), x.device());
  Tensor k = Tensor::empty(Shape{B * H, S, D}, x.dtype(), x.device());
  Tensor v = Tensor::empty(Shape{B * H, S, D}, x.dtype(), x.device());
  if (cross_) {
    const Tensor q_packed = in_->forward_tensor(x, ctx.child(0));
    const Tensor kv_packed = kv_->forward_tensor(memory, ctx.child(1));
    split_heads(q_packed, 0, H, q);
    split_heads(kv_packed, 0, H, k);
    split_heads(kv_packed, embed_dim_, H, v);
  } else {
    const Tensor qkv = in_->forward_tensor(x, ctx.child(0));
    split_heads(qkv, 0, H, q);
    split_heads(qkv, embed_dim_, H, k);
    split_heads(qkv, 2 * embed_dim_, H, v);
  }
  Tensor probs = Tensor::empty(Shape{B * H, Tn, S}, x.dtype(), x.device());
  ops::gemm_strided_batched(q, false, k, true, probs, 1.0 / std::sqrt(static_cast<double>(D)));
  masked_softmax(probs, key_padding, B, H, causal_);

  Tensor attended = probs;
  if (ctx.training && dropout_ > 0.0) {
    const std::uint64_t key = rng::stream_key(name() + ".attention_dropout", static_cast<std::uint64_t>(block_index()), ctx.step);
    attended = Tensor::empty(Shape{B, H, Tn, S}, x.dtype(), x.device());
    dropout_apply(probs.reshape(attended.shape()), attended, dropout_, ctx.seed, key, ctx.first_sample);
    attended = attended.reshape(probs.shape());
  }
  Tensor heads = Tensor::empty(Shape{B * H, Tn, D}, x.dtype(), x.device());
  ops::gemm_strided_batched(attended, false, v, false, heads);
  Tensor merged = Tensor::empty(Shape{B, Tn, embed_dim_}, x.dtype(), x.device());
  merge_heads(heads, 0, H, merged);
  Tensor y = out_->forward_tensor(merged, ctx.child(cross_ ? 2 : 1));

  ctx.save_shape("inputs", Shape{static_cast<std::int64_t>(inputs.size())});
  ctx.save("q", detail::as_gemm_operand(q));  // Q, K, V only multiply: 16-bit under a rounding scope
  ctx.save("k", detail::as_gemm_operand(k));
  ctx.save("v", detail::as_gemm_operand(v));
  ctx.save("probs", probs);  // softmax_backward reads it unrounded
  if (!attended.same_storage(probs)) ctx.save("attended", detail::as_gemm_operand(attended));
  return {y};
}

TensorList MultiHeadAttention::backward_input(const TensorList& grad_outputs, Context& ctx) {
  LOOM_CHECK(!grad_outputs.empty() && grad_outputs[0].defined(), describe(), ": missing output gradient");
  const Tensor q = detail::widened_gemm_operand(ctx.get("q")), k = detail::widened_gemm_operand(ctx.get("k")),
               v = detail::widened_gemm_operand(ctx.get("v")), probs = ctx.get("probs");
  const Tensor attended =
      ctx.has("attended") && ctx.get("attended").defined() ? detail::widened_gemm_operand(ctx.get("attended")) : probs;
  const std::int64_t H = num_heads_, D = head_dim_, BH = q.size(0), B = BH / H, Tn = q.size(1), S = k.size(1);
  Context& out_ctx = ctx.child(cross_ ? 2 : 1);
  const Tensor d_merged = out_->backward_input_tensor(grad_outputs[0], out_ctx);

  Tensor d_heads = Tensor::empty(Shape{BH, Tn, D}, q.dtype(), q.device());
  split_heads(d_merged, 0, H, d_heads);
  Tensor d_probs = Tensor::empty(Shape{BH, Tn, S}, q.dtype(), q.device());
  ops::gemm_strided_batched(d_heads, false, v, true, d_probs);
  Tensor dv = Tensor::empty(Shape{BH, S, D}, q.dtype(), q.device());
  ops::gemm_strided_batched(attended, true, d_heads, false, dv);
  if (!attended.same_storage(probs)) {
    // Through the dropout: the keep-mask is regenerated, not saved.
    const std::uint64_t key = rng::stream_key(name() + ".attention_dropout", static_cast<std::uint64_t>(block_index()), ctx.step);
    Tensor per_sample = d_probs.reshape(Shape{B, H, Tn, S});
    dropout_apply(per_sample, per_sample, dropout_, ctx.seed, key, ctx.first_sample);
  }
  Tensor d_scores = Tensor::empty(Shape{BH, Tn, S}, q.dtype(), q.device());
  ops::softmax_backward(probs, d_probs, d_scores);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  Tensor dq = Tensor::empty(Shape{BH, Tn, D}, q.dtype(), q.device());
  ops::gemm_strided_batched(d_scores, false, k, false, dq, scale);
  Tensor dk = Tensor::empty(Shape{BH, S, D}, q.dtype(), q.device());
  ops::gemm_strided_batched(d_scores, true, q, false, dk, scale);

  TensorList grads;
  if (cross_) {
    Tensor d_q = Tensor::empty(Shape{B, Tn, embed_dim_}, q.dtype(), q.device());
    merge_heads(dq, 0, H, d_q);
    Tensor d_kv = Tensor::empty(Shape{B, S, 2 * embed_dim_}, q.dtype(), q.device());
    merge_heads(dk, 0, H, d_kv);
    merge_heads(dv, embed_dim_, H, d_kv);
    grads = {in_->backward_input_tensor(d_q, ctx.child(0)), kv_->backward_input_tensor(d_kv, ctx.child(1))};
  } else {
    Tensor d_qkv = Tensor::empty(Shape{B, Tn, 3 * embed_dim_}, q.dtype(), q.device());
    merge_heads(dq, 0, H, d_qkv);
    merge_heads(dk, embed_dim_, H, d_qkv);
    merge_heads(dv, 2 * embed_dim_, H, d_qkv);
    grads = {in_->backward_input_tensor(d_qkv, ctx.child(0))};
  }
  // backward_weight needs only the projections' contexts: free the attention tensors now.
  for (const char* key : {"q", "k", "v", "probs", "attended"}) ctx.save(key, Tensor());
  if (ctx.get_shape("inputs")[0] > static_cast<std::int64_t>(grads.size())) grads.emplace_back();  // the mask
  return grads;
}

void MultiHeadAttention::backward_weight(Context& ctx) {
  in_->backward_weight(ctx.child(0));
  if (cross_) kv_->backward_weight(ctx.child(1));
  out_->backward_weight(ctx.child(cross_ ? 2 : 1));
  ctx.clear();
}

std::vector<Shape> MultiHeadAttention::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(!input_shapes.empty() && input_shapes[0].rank() == 3 && input_shapes[0][2] == embed_dim_, describe(),
             ": input shape must be [batch, length, ", embed_dim_, "]");
  return {input_shapes[0]};
}

double MultiHeadAttention::flops(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  const double B = static_cast<double>(x[0]), Tn = static_cast<double>(x[1]);
  const double S = cross_ ? static_cast<double>(input_shapes.at(1)[1]) : Tn;
  const double E = static_cast<double>(embed_dim_);
  const double projections = 2.0 * B * Tn * E * E * 2.0 + 2.0 * B * S * E * 2.0 * E;  // q + out, k + v
  const double products = 2.0 * 2.0 * B * Tn * S * E;                              // scores and P v
  return projections + products + 5.0 * B * static_cast<double>(num_heads_) * Tn * S;
}

std::size_t MultiHeadAttention::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  const std::size_t B = static_cast<std::size_t>(x[0]), Tn = static_cast<std::size_t>(x[1]);
  const std::size_t S = cross_ ? static_cast<std::size_t>(input_shapes.at(1)[1]) : Tn;
  const std::size_t E = static_cast<std::size_t>(embed_dim_), H = static_cast<std::size_t>(num_heads_);
  const std::size_t inputs = B * Tn * E + (cross_ ? B * S * E : 0);  // saved by the projections
  const std::size_t heads = B * Tn * E + 2 * B * S * E;              // q, k, v
  const std::size_t probs = B * H * Tn * S * (dropout_ > 0 ? 2 : 1);
  return 4 * (inputs + heads + probs + B * Tn * E);  // + the out projection's input
}

}  // namespace loom
