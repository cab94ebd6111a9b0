// Two-stream relative attention (see relative_attention.h). Heads are laid out [B*H, T, D]; the
// relative encodings kr [H, P, D] (P = 2T-1) are shared by the samples, so the position scores
// are one strided-batched GEMM per sample:
//   ac = (q + u) k^T / sqrt(D)      bd = (q + w) kr^T / sqrt(D)     [., T, T] and [., T, P]
//   scores[i, j] = ac[i, j] + bd[i, T-1-i+j]       P = masked softmax(scores)      out = drop(P) v
// Backward (dS the softmax gradient, already divided by sqrt(D); dbd its scatter to [., T, P]):
//   dv += drop(P)^T dctx   dk += dS^T (q + u)   dq = dS k + dbd kr   dkr += dbd^T (q + w)
//   du += sum over (b, t) of dS k               dw += sum over (b, t) of dbd kr
#include <loom/layers/relative_attention.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <loom/core/ops.h>
#include <loom/core/rng.h>
#include <loom/layers/dropout.h>

#include "layer_util.h"

namespace loom {

namespace {

enum Slot : std::size_t { kQueryH, kQueryG, kKey, kValue, kRelative, kOutH, kOutG };

// dst [N*H, L, D] <- src [N, L, H*D] (to_heads) or back (!to_heads).
void move_heads(const Tensor& src, Tensor& dst, std::int64_t H, bool to_heads) {
  const Tensor& packed = to_heads ? src : dst;
  const std::int64_t N = packed.size(0), L = packed.size(1), D = packed.size(2) / H;
  dispatch_floating(src.dtype(), "TwoStreamRelativeAttention", [&]<typename T>(T) {
    const T* from = src.data<T>();
    T* to = dst.data<T>();
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t l = 0; l < L; ++l) {
          const std::int64_t packed_at = (n * L + l) * H * D + h * D, heads_at = ((n * H + h) * L + l) * D;
          if (to_heads) std::memcpy(to + heads_at, from + packed_at, sizeof(T) * D);
          else std::memcpy(to + packed_at, from + heads_at, sizeof(T) * D);
        }
  });
}

Tensor to_heads(const Tensor& packed, std::int64_t H) {
  Tensor heads = Tensor::empty(Shape{packed.size(0) * H, packed.size(1), packed.size(2) / H}, packed.dtype());
  move_heads(packed, heads, H, true);
  return heads;
}

Tensor from_heads(const Tensor& heads, std::int64_t H) {
  Tensor packed = Tensor::empty(Shape{heads.size(0) / H, heads.size(1), heads.size(2) * H}, heads.dtype());
  move_heads(heads, packed, H, false);
  return packed;
}

// q [B*H, T, D] + bias [H, D] for every sample and position.
Tensor plus_head_bias(const Tensor& q, const Tensor& bias) {
  Tensor out = detail::empty_like(q);
  const std::int64_t BH = q.size(0), L = q.size(1), H = bias.size(0), D = bias.size(1);
  dispatch_floating(q.dtype(), "TwoStreamRelativeAttention", [&]<typename T>(T) {
    const T *x = q.data<T>(), *b = bias.data<T>();
    T* y = out.data<T>();
    for (std::int64_t row = 0; row < BH * L; ++row)
      for (std::int64_t d = 0; d < D; ++d) y[row * D + d] = x[row * D + d] + b[((row / L) % H) * D + d];
  });
  return out;
}

// sums [H, D] += sum over samples and positions of x [B*H, T, D].
void add_head_sums(const Tensor& x, Tensor& sums) {
  const std::int64_t BH = x.size(0), L = x.size(1), H = sums.size(0), D = sums.size(1);
  dispatch_floating(x.dtype(), "TwoStreamRelativeAttention", [&]<typename T>(T) {
    const T* from = x.data<T>();
    T* to = sums.data<T>();
    for (std::int64_t row = 0; row < BH * L; ++row)
      for (std::int64_t d = 0; d < D; ++d) to[((row / L) % H) * D + d] += from[row * D + d];
  });
}

// scores [., T, T] += bd [., T, P] at p = T-1-i+j (gather), or dbd = 0 except there (scatter).
void relative_shift(Tensor& scores, Tensor& bd, bool gather) {
  const std::int64_t N = scores.size(0), L = scores.size(1), P = bd.size(2);
  dispatch_floating(scores.dtype(), "TwoStreamRelativeAttention", [&]<typename T>(T) {
    T *s = scores.data<T>(), *r = bd.data<T>();
    if (!gather) std::memset(r, 0, sizeof(T) * static_cast<std::size_t>(N * L * P));
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < L; ++i) {
        T* srow = s + (n * L + i) * L;
        T* rrow = r + (n * L + i) * P + (L - 1 - i);
        for (std::int64_t j = 0; j < L; ++j) {
          if (gather) srow[j] += rrow[j];
          else rrow[j] = srow[j];
        }
      }
  });
}

// In place over scores [B*H, T, T]: softmax over the keys each query may see (see the header);
// the rest, and rows that see nothing, become 0.
void permutation_softmax(Tensor& scores, const std::vector<double>& ranks, std::int64_t H, bool content) {
  const std::int64_t BH = scores.size(0), L = scores.size(1);
  dispatch_floating(scores.dtype(), "TwoStreamRelativeAttention", [&]<typename T>(T) {
    for (std::int64_t row = 0; row < BH * L; ++row) {
      const std::int64_t b = row / L / H, i = row % L;
      const double* rank = ranks.data() + b * L;
      T* s = scores.data<T>() + row * L;
      const auto sees = [&](std::int64_t j) { return content ? rank[j] <= rank[i] : rank[j] < rank[i]; };
      T top = -std::numeric_limits<T>::infinity();
      for (std::int64_t j = 0; j < L; ++j)
        if (sees(j)) top = std::max(top, s[j]);
      T total = 0;
      for (std::int64_t j = 0; j < L; ++j) {
        s[j] = sees(j) ? std::exp(s[j] - top) : T(0);
        total += s[j];
      }
      for (std::int64_t j = 0; j < L; ++j) s[j] = total > T(0) ? s[j] / total : T(0);
    }
  });
}

// c[b] = op(a[b]) op(kr) for each sample b, a and c [B*H, ., .], kr [H, ., .] (beta 1: c +=).
void per_sample_gemm(const Tensor& a, bool transpose_a, const Tensor& kr, bool transpose_kr, Tensor& c,
                     double alpha, double beta) {
  const std::int64_t H = kr.size(0);
  for (std::int64_t b = 0; b < a.size(0) / H; ++b) {
    Tensor out = c.slice(b * H, (b + 1) * H);
    ops::gemm_strided_batched(a.slice(b * H, (b + 1) * H), transpose_a, kr, transpose_kr, out, alpha, beta);
  }
}

// kr^T-side product: dkr [H, P, D] += sum over samples of dbd[b]^T qw[b].
void accumulate_relative_grad(const Tensor& dbd, const Tensor& qw, Tensor& dkr) {
  const std::int64_t H = dkr.size(0);
  for (std::int64_t b = 0; b < dbd.size(0) / H; ++b)
    ops::gemm_strided_batched(dbd.slice(b * H, (b + 1) * H), true, qw.slice(b * H, (b + 1) * H), false, dkr, 1.0,
                              1.0);
}

Init xlnet_init() { return Init::normal(0.0, 0.02); }

}  // namespace

Tensor relative_sinusoids(std::int64_t length, std::int64_t embed_dim, DType dtype) {
  LOOM_CHECK(length >= 1 && embed_dim >= 2 && embed_dim % 2 == 0, "relative_sinusoids: length ", length,
             " and an even embed_dim (got ", embed_dim, ") are required");
  const std::int64_t P = 2 * length - 1, half = embed_dim / 2;
  std::vector<double> values(static_cast<std::size_t>(P * embed_dim));
  for (std::int64_t p = 0; p < P; ++p) {
    const double distance = static_cast<double>(length - 1 - p);
    for (std::int64_t k = 0; k < half; ++k) {
      const double angle = distance * std::pow(10000.0, -2.0 * static_cast<double>(k) / static_cast<double>(embed_dim));
      values[static_cast<std::size_t>(p * embed_dim + k)] = std::sin(angle);
      values[static_cast<std::size_t>(p * embed_dim + half + k)] = std::cos(angle);
    }
  }
  Tensor out = Tensor::empty(Shape{P, embed_dim}, dtype);
  ops::cast(Tensor::from_vector(values, Shape{P, embed_dim}), out);
  return out;
}

struct TwoStreamRelativeAttention::Shared {
  Tensor k, v, kr;                                           // [B*H, T, D], [B*H, T, D], [H, P, D]
  Tensor dk, dv, dkr, d_content_bias, d_position_bias;       // backward accumulators
};

TwoStreamRelativeAttention::TwoStreamRelativeAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout)
    : embed_dim_(embed_dim),
      num_heads_(num_heads),
      head_dim_(num_heads > 0 ? embed_dim / num_heads : 0),
      dropout_(dropout),
      q_(embed_dim, embed_dim, false),
      k_(embed_dim, embed_dim, false),
      v_(embed_dim, embed_dim, false),
      o_(embed_dim, embed_dim, false),
      r_(embed_dim, embed_dim, false) {
  LOOM_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0 && embed_dim % 2 == 0,
             "TwoStreamRelativeAttention: embed_dim ", embed_dim, " must be even and a multiple of num_heads ",
             num_heads);
  LOOM_CHECK(dropout >= 0.0 && dropout < 1.0, "TwoStreamRelativeAttention: dropout must be in [0, 1), got ", dropout);
  for (Linear* projection : {&q_, &k_, &v_, &o_, &r_}) projection->set_init(xlnet_init(), Init::zeros());
  content_bias_ = make_parameter("content_bias", Shape{num_heads, head_dim_}, xlnet_init());
  position_bias_ = make_parameter("position_bias", Shape{num_heads, head_dim_}, xlnet_init());
}

std::vector<std::pair<std::string, Layer*>> TwoStreamRelativeAttention::children() {
  return {{"q", &q_}, {"k", &k_}, {"v", &v_}, {"o", &o_}, {"r", &r_}};
}

std::uint64_t TwoStreamRelativeAttention::dropout_key(const std::string& stream, const Context& ctx) const {
  return rng::stream_key(name() + "." + stream + ".attention_dropout", static_cast<std::uint64_t>(block_index()),
                         ctx.step);
}

Tensor TwoStreamRelativeAttention::attend(const Tensor& q, const Shared& shared, const Tensor& ranks, bool content,
                                          Context& ctx, const std::string& stream) {
  const std::int64_t BH = q.size(0), L = q.size(1), H = num_heads_;
  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  Tensor probs = Tensor::empty(Shape{BH, L, L}, q.dtype());
  ops::gemm_strided_batched(plus_head_bias(q, content_bias_.value), false, shared.k, true, probs, scale);
  Tensor bd = Tensor::empty(Shape{BH, L, shared.kr.size(1)}, q.dtype());
  per_sample_gemm(plus_head_bias(q, position_bias_.value), false, shared.kr, true, bd, scale, 0.0);
  relative_shift(probs, bd, true);
  permutation_softmax(probs, ranks.to_double_vector(), H, content);

  Tensor attended = probs;
  if (ctx.training && dropout_ > 0.0) {
    attended = Tensor::empty(Shape{BH / H, H, L, L}, q.dtype());
    dropout_apply(probs.reshape(attended.shape()), attended, dropout_, ctx.seed, dropout_key(stream, ctx),
                  ctx.first_sample);
    attended = attended.reshape(probs.shape());
    ctx.save(stream + ".attended", attended);
  }
  Tensor heads = Tensor::empty(q.shape(), q.dtype());
  ops::gemm_strided_batched(attended, false, shared.v, false, heads);
  ctx.save(stream + ".q", q);
  ctx.save(stream + ".probs", probs);
  return from_heads(heads, H);
}

TensorList TwoStreamRelativeAttention::forward(const TensorList& inputs, Context& ctx) {
  detail::check_inputs(*this, inputs, 3);
  const Tensor &h = inputs[0], &g = inputs[1], &ranks = inputs[2];
  for (const Tensor& x : inputs)
    LOOM_CHECK(!x.device().is_cuda(), describe(), " has no CUDA path yet (its inputs are on ", x.device().str(), ")");
  LOOM_CHECK(h.rank() == 3 && h.size(2) == embed_dim_ && g.shape() == h.shape(), describe(), ": streams of shapes ",
             h.shape().str(), " and ", g.shape().str(), " are not both [batch, length, ", embed_dim_, "]");
  const std::int64_t B = h.size(0), L = h.size(1), H = num_heads_;
  LOOM_CHECK(ranks.shape() == (Shape{B, L}), describe(), ": ranks shape ", ranks.shape().str(), ", expected ",
             Shape{B, L}.str());
  Shared shared;
  shared.k = to_heads(k_.forward_tensor(h, ctx.child(kKey)), H);
  shared.v = to_heads(v_.forward_tensor(h, ctx.child(kValue)), H);
  const Tensor sinusoids = relative_sinusoids(L, embed_dim_, h.dtype());
  shared.kr = to_heads(r_.forward_tensor(sinusoids, ctx.child(kRelative)).reshape(Shape{1, 2 * L - 1, embed_dim_}), H);
  const Tensor q_h = to_heads(q_.forward_tensor(h, ctx.child(kQueryH)), H);
  const Tensor q_g = to_heads(q_.forward_tensor(g, ctx.child(kQueryG)), H);
  const Tensor a_h = o_.forward_tensor(attend(q_h, shared, ranks, true, ctx, "h"), ctx.child(kOutH));
  const Tensor a_g = o_.forward_tensor(attend(q_g, shared, ranks, false, ctx, "g"), ctx.child(kOutG));
  ctx.save_shape("ranks", ranks.shape());
  ctx.save("k", shared.k);
  ctx.save("v", shared.v);
  ctx.save("kr", shared.kr);
  return {a_h, a_g};
}

Tensor TwoStreamRelativeAttention::attend_backward(const Tensor& d_merged, Shared& shared, Context& ctx,
                                                   const std::string& stream) {
  const Tensor q = ctx.get(stream + ".q"), probs = ctx.get(stream + ".probs");
  const bool dropped = ctx.has(stream + ".attended") && ctx.get(stream + ".attended").defined();
  const Tensor attended = dropped ? ctx.get(stream + ".attended") : probs;
  const std::int64_t BH = q.size(0), L = q.size(1), H = num_heads_;
  const Tensor d_heads = to_heads(d_merged, H);
  Tensor d_probs = Tensor::empty(probs.shape(), q.dtype());
  ops::gemm_strided_batched(d_heads, false, shared.v, true, d_probs);
  ops::gemm_strided_batched(attended, true, d_heads, false, shared.dv, 1.0, 1.0);
  if (dropped) {  // the keep-mask is regenerated, not saved
    Tensor per_sample = d_probs.reshape(Shape{BH / H, H, L, L});
    dropout_apply(per_sample, per_sample, dropout_, ctx.seed, dropout_key(stream, ctx), ctx.first_sample);
  }
  Tensor d_scores = Tensor::empty(probs.shape(), q.dtype());
  ops::softmax_backward(probs, d_probs, d_scores);
  ops::scale(d_scores, 1.0 / std::sqrt(static_cast<double>(head_dim_)));

  Tensor dq = Tensor::empty(q.shape(), q.dtype());
  ops::gemm_strided_batched(d_scores, false, shared.k, false, dq);
  ops::gemm_strided_batched(d_scores, true, plus_head_bias(q, content_bias_.value), false, shared.dk, 1.0, 1.0);
  add_head_sums(dq, shared.d_content_bias);
  Tensor d_bd = Tensor::empty(Shape{BH, L, shared.kr.size(1)}, q.dtype());
  relative_shift(d_scores, d_bd, false);
  Tensor dq_position = Tensor::empty(q.shape(), q.dtype());
  per_sample_gemm(d_bd, false, shared.kr, false, dq_position, 1.0, 0.0);
  accumulate_relative_grad(d_bd, plus_head_bias(q, position_bias_.value), shared.dkr);
  add_head_sums(dq_position, shared.d_position_bias);
  ops::axpy(1.0, dq_position, dq);
  return dq;
}

TensorList TwoStreamRelativeAttention::backward_input(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 2);
  const std::int64_t H = num_heads_;
  Shared shared{ctx.get("k"), ctx.get("v"), ctx.get("kr"), {}, {}, {}, {}, {}};
  const DType dtype = shared.k.dtype();
  shared.dk = Tensor::zeros(shared.k.shape(), dtype);
  shared.dv = Tensor::zeros(shared.v.shape(), dtype);
  shared.dkr = Tensor::zeros(shared.kr.shape(), dtype);
  shared.d_content_bias = Tensor::zeros(content_bias_.value.shape(), dtype);
  shared.d_position_bias = Tensor::zeros(position_bias_.value.shape(), dtype);
  const Tensor dq_h = attend_backward(o_.backward_input_tensor(grad_outputs[0], ctx.child(kOutH)), shared, ctx, "h");
  const Tensor dq_g = attend_backward(o_.backward_input_tensor(grad_outputs[1], ctx.child(kOutG)), shared, ctx, "g");

  Tensor dh = q_.backward_input_tensor(from_heads(dq_h, H), ctx.child(kQueryH));
  ops::axpy(1.0, k_.backward_input_tensor(from_heads(shared.dk, H), ctx.child(kKey)), dh);
  ops::axpy(1.0, v_.backward_input_tensor(from_heads(shared.dv, H), ctx.child(kValue)), dh);
  const Tensor dg = q_.backward_input_tensor(from_heads(dq_g, H), ctx.child(kQueryG));
  const Tensor d_kr = from_heads(shared.dkr, H);
  r_.backward_input_tensor(d_kr.reshape(Shape{d_kr.size(1), embed_dim_}), ctx.child(kRelative));
  // backward_weight needs the projections' contexts and the bias sums only.
  for (const char* key : {"k", "v", "kr", "h.q", "h.probs", "h.attended", "g.q", "g.probs", "g.attended"})
    ctx.save(key, Tensor());
  ctx.save("d_content_bias", shared.d_content_bias);
  ctx.save("d_position_bias", shared.d_position_bias);
  return {dh, dg, Tensor::zeros(ctx.get_shape("ranks"), dtype)};
}

void TwoStreamRelativeAttention::backward_weight(Context& ctx) {
  q_.backward_weight(ctx.child(kQueryH));
  q_.backward_weight(ctx.child(kQueryG));
  k_.backward_weight(ctx.child(kKey));
  v_.backward_weight(ctx.child(kValue));
  r_.backward_weight(ctx.child(kRelative));
  o_.backward_weight(ctx.child(kOutH));
  o_.backward_weight(ctx.child(kOutG));
  ops::axpy(1.0, ctx.get("d_content_bias"), content_bias_.grad);
  ops::axpy(1.0, ctx.get("d_position_bias"), position_bias_.grad);
  ctx.clear();
}

std::vector<Shape> TwoStreamRelativeAttention::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 3 && input_shapes[0].rank() == 3 && input_shapes[0][2] == embed_dim_, describe(),
             ": expects shapes of {h, g, ranks} with h [batch, length, ", embed_dim_, "]");
  return {input_shapes[0], input_shapes[0]};
}

double TwoStreamRelativeAttention::flops(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  const double B = static_cast<double>(x[0]), L = static_cast<double>(x[1]), E = static_cast<double>(embed_dim_);
  const double projections = 2.0 * E * E * (B * L * 5.0 + (2.0 * L - 1.0));  // q twice, k, v, o twice; r
  const double products = 2.0 * 2.0 * B * L * E * (L + (2.0 * L - 1.0) + L);  // ac, bd, P v per stream
  return projections + products + 2.0 * 6.0 * B * static_cast<double>(num_heads_) * L * L;
}

std::size_t TwoStreamRelativeAttention::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const Shape& x = input_shapes.at(0);
  const std::size_t B = static_cast<std::size_t>(x[0]), L = static_cast<std::size_t>(x[1]);
  const std::size_t E = static_cast<std::size_t>(embed_dim_), H = static_cast<std::size_t>(num_heads_);
  const std::size_t projection_inputs = 6 * B * L * E + (2 * L - 1) * E;  // q (2), k, v, o (2) inputs; R
  const std::size_t heads = 4 * B * L * E + (2 * L - 1) * E;              // q (2), k, v; kr
  const std::size_t probs = 2 * B * H * L * L * (dropout_ > 0 ? 2 : 1);
  return 4 * (projection_inputs + heads + probs);
}

}  // namespace loom
