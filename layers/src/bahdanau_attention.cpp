// Additive attention (see bahdanau_attention.h). The projections are Linear children (context
// children 0 and 1); the score kernels run here on the CPU (Eigen) or in
// cuda/bahdanau_attention.cu; the rest goes through loom::ops on either device.
#include <loom/layers/bahdanau_attention.h>

#include <cmath>
#include <limits>

// GCC 12 reports Eigen's AVX-512 tanh packets as maybe-uninitialized (a false positive inside the
// intrinsics headers, reached through inlining).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>

#include <loom/core/memory.h>
#include <loom/core/ops.h>

#include "cuda/bahdanau_attention.h"
#include "layer_util.h"

namespace loom {

namespace {

template <typename T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <typename T>
using ConstMap = Eigen::Map<const Vec<T>>;
template <typename T>
using Map = Eigen::Map<Vec<T>>;

struct Sizes {
  std::int64_t batch, queries, keys, units;
};

template <typename T>
void probs_cpu(const Sizes& s, const T* pq, const T* pk, const T* bias, const T* v_hat, const T* padding, T* probs) {
  const ConstMap<T> b(bias, s.units), v(v_hat, s.units);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t i = 0; i < s.queries; ++i) {
      const ConstMap<T> query(pq + (n * s.queries + i) * s.units, s.units);
      T* row = probs + (n * s.queries + i) * s.keys;
      T largest = -std::numeric_limits<T>::infinity();
      for (std::int64_t j = 0; j < s.keys; ++j) {
        if (padding && padding[n * s.keys + j] != T(0)) {
          row[j] = -std::numeric_limits<T>::infinity();
          continue;
        }
        const ConstMap<T> key(pk + (n * s.keys + j) * s.units, s.units);
        row[j] = ((query + key + b).tanh() * v).sum();
        largest = std::max(largest, row[j]);
      }
      if (largest == -std::numeric_limits<T>::infinity()) {  // every key padded: no attention
        std::fill(row, row + s.keys, T(0));
        continue;
      }
      T total = 0;
      for (std::int64_t j = 0; j < s.keys; ++j) total += row[j] = std::exp(row[j] - largest);
      for (std::int64_t j = 0; j < s.keys; ++j) row[j] /= total;
    }
}

// grad_v_hat and grad_bias sum N * Tq * Tk terms: each query row is summed in T, the rows in double.
template <typename T>
void backward_cpu(const Sizes& s, const T* pq, const T* pk, const T* bias, const T* v_hat, const T* grad_scores,
                  T* grad_pq, T* grad_pk, T* grad_v_hat, T* grad_bias) {
  const ConstMap<T> b(bias, s.units), v(v_hat, s.units);
  std::fill(grad_pq, grad_pq + s.batch * s.queries * s.units, T(0));
  std::fill(grad_pk, grad_pk + s.batch * s.keys * s.units, T(0));
  Vec<double> dv_total = Vec<double>::Zero(s.units), db_total = Vec<double>::Zero(s.units);
  Vec<T> t(s.units), w(s.units), dv(s.units);
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t i = 0; i < s.queries; ++i) {
      const ConstMap<T> query(pq + (n * s.queries + i) * s.units, s.units);
      Map<T> dq(grad_pq + (n * s.queries + i) * s.units, s.units);
      dv.setZero();
      for (std::int64_t j = 0; j < s.keys; ++j) {
        const T ds = grad_scores[(n * s.queries + i) * s.keys + j];
        if (ds == T(0)) continue;  // padded keys (probability 0) and exact zeros contribute nothing
        t = (query + ConstMap<T>(pk + (n * s.keys + j) * s.units, s.units) + b).tanh();
        dv += ds * t;
        w = ds * v * (T(1) - t * t);
        dq += w;
        Map<T>(grad_pk + (n * s.keys + j) * s.units, s.units) += w;
      }
      dv_total += dv.template cast<double>();
      db_total += dq.template cast<double>();
    }
  Map<T>(grad_v_hat, s.units) = dv_total.cast<T>();
  Map<T>(grad_bias, s.units) = db_total.cast<T>();
}

}  // namespace

BahdanauAttention::BahdanauAttention(const BahdanauAttentionOptions& options)
    : options_(options),
      linear_q_(options.query_size, options.units, false),
      linear_k_(options.key_size, options.units, false) {
  LOOM_CHECK(options_.units > 0 && options_.key_size > 0 && options_.query_size > 0,
             "BahdanauAttention: sizes must be positive");
  linear_att_ = make_parameter("linear_att", {options_.units}, Init::uniform(-0.1, 0.1));
  normalize_scalar_ =
      make_parameter("normalize_scalar", {1}, Init::constant(1.0 / std::sqrt(static_cast<double>(options_.units))));
  normalize_bias_ = make_parameter("normalize_bias", {options_.units}, Init::zeros());
}

std::vector<Parameter*> BahdanauAttention::local_parameters() {
  return {&linear_att_, &normalize_scalar_, &normalize_bias_};
}

std::vector<std::pair<std::string, Layer*>> BahdanauAttention::children() {
  return {{"linear_q", &linear_q_}, {"linear_k", &linear_k_}};
}

Tensor BahdanauAttention::normalized_v() const {
  const double norm = std::sqrt(ops::sum_of_squares(linear_att_.value));
  LOOM_CHECK(norm > 0, describe(), ": linear_att is zero, its direction is undefined");
  Tensor v_hat = Tensor::empty(linear_att_.value.shape(), linear_att_.value.dtype(), linear_att_.value.device());
  ops::add_scaled(linear_att_.value, normalize_scalar_.value.item() / norm, linear_att_.value, 0.0, v_hat);
  return v_hat;
}

TensorList BahdanauAttention::forward(const TensorList& inputs, Context& ctx) {
  LOOM_CHECK(inputs.size() == 2 || inputs.size() == 3, describe(),
             ": expected inputs {query, keys} or {query, keys, key_padding_mask}, got ", inputs.size());
  detail::check_inputs(*this, inputs, inputs.size());
  const Tensor& query = inputs[0];
  const Tensor& keys = inputs[1];
  LOOM_CHECK(query.rank() == 3 && keys.rank() == 3 && query.size(0) == keys.size(0) && keys.size(1) > 0, describe(),
             ": query ", query.shape().str(), " and keys ", keys.shape().str(), " must be [N, Tq, ", options_.query_size,
             "] and [N, Tk > 0, ", options_.key_size, "]");
  detail::check_last_dim(*this, "keys", keys, options_.key_size, "linear_k.weight", linear_k_.weight().value.shape());
  detail::check_like(*this, "keys", keys, linear_k_.weight().value, "linear_k.weight");
  const Sizes s{query.size(0), query.size(1), keys.size(1), options_.units};

  MemoryCategoryScope scope(MemoryCategory::activations);
  const Tensor pq = linear_q_.forward_tensor(query, ctx.child(0));
  const Tensor pk = linear_k_.forward_tensor(keys, ctx.child(1));
  Tensor padding;
  if (inputs.size() == 3) {
    const Tensor& mask = inputs[2];
    detail::check_same_shape(*this, "key padding mask", mask, {s.batch, s.keys});
    MemoryCategoryScope workspace(MemoryCategory::workspace);
    padding = Tensor::empty(mask.shape(), keys.dtype(), keys.device());
    ops::cast(mask.device() == keys.device() ? mask : mask.to(keys.device()), padding);
  }
  Tensor probs = Tensor::empty({s.batch, s.queries, s.keys}, keys.dtype(), keys.device());
  {
    MemoryCategoryScope workspace(MemoryCategory::workspace);
    const Tensor v_hat = normalized_v();
    if (keys.device().is_cuda()) {
      cuda_kernels::additive_attention_probs(pq, pk, normalize_bias_.value, v_hat, padding, probs);
    } else {
      dispatch_floating(keys.dtype(), describe(), [&]<typename T>(T) {
        probs_cpu<T>(s, pq.data<T>(), pk.data<T>(), normalize_bias_.value.data<T>(), v_hat.data<T>(),
                     padding.defined() ? padding.data<T>() : nullptr, probs.data<T>());
      });
    }
  }
  Tensor context = Tensor::empty({s.batch, s.queries, options_.key_size}, keys.dtype(), keys.device());
  ops::gemm_strided_batched(probs, false, keys, false, context);
  ctx.save("keys", keys);
  ctx.save("pq", pq);
  ctx.save("pk", pk);
  ctx.save("probs", probs);
  ctx.save_shape("inputs", Shape{static_cast<std::int64_t>(inputs.size())});
  return {context};
}

TensorList BahdanauAttention::backward_input(const TensorList& grad_outputs, Context& ctx) {
  detail::check_inputs(*this, grad_outputs, 1);
  const Tensor& grad_context = grad_outputs[0];
  const Tensor keys = ctx.get("keys");
  const Tensor pq = ctx.get("pq");
  const Tensor pk = ctx.get("pk");
  const Tensor probs = ctx.get("probs");
  const Sizes s{probs.size(0), probs.size(1), probs.size(2), options_.units};
  detail::check_same_shape(*this, "context gradient", grad_context, {s.batch, s.queries, options_.key_size});

  Tensor grad_pq, grad_pk, grad_keys;
  {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    Tensor grad_probs = Tensor::empty(probs.shape(), probs.dtype(), probs.device());
    ops::gemm_strided_batched(grad_context, false, keys, true, grad_probs);
    Tensor grad_scores = Tensor::empty(probs.shape(), probs.dtype(), probs.device());
    ops::softmax_backward(probs, grad_probs, grad_scores);
    grad_pq = Tensor::empty(pq.shape(), pq.dtype(), pq.device());
    grad_pk = Tensor::empty(pk.shape(), pk.dtype(), pk.device());
    Tensor grad_v_hat, grad_bias;
    {
      MemoryCategoryScope kept(MemoryCategory::activations);  // until backward_weight
      grad_v_hat = Tensor::empty({s.units}, pq.dtype(), pq.device());
      grad_bias = Tensor::empty({s.units}, pq.dtype(), pq.device());
    }
    const Tensor v_hat = normalized_v();
    if (pq.device().is_cuda()) {
      cuda_kernels::additive_attention_backward(pq, pk, normalize_bias_.value, v_hat, grad_scores, grad_pq, grad_pk,
                                                grad_v_hat, grad_bias);
    } else {
      dispatch_floating(pq.dtype(), describe(), [&]<typename T>(T) {
        backward_cpu<T>(s, pq.data<T>(), pk.data<T>(), normalize_bias_.value.data<T>(), v_hat.data<T>(),
                        grad_scores.data<T>(), grad_pq.data<T>(), grad_pk.data<T>(), grad_v_hat.data<T>(),
                        grad_bias.data<T>());
      });
    }
    ctx.save("grad_v_hat", grad_v_hat);
    ctx.save("grad_bias", grad_bias);
  }
  grad_keys = Tensor::empty(keys.shape(), keys.dtype(), keys.device());
  ops::gemm_strided_batched(probs, true, grad_context, false, grad_keys);
  const Tensor grad_query = linear_q_.backward_input_tensor(grad_pq, ctx.child(0));
  ops::axpy(1.0, linear_k_.backward_input_tensor(grad_pk, ctx.child(1)), grad_keys);
  TensorList grads{grad_query, grad_keys};
  if (ctx.get_shape("inputs")[0] == 3) grads.emplace_back();  // the mask has no gradient
  return grads;
}

void BahdanauAttention::backward_weight(Context& ctx) {
  linear_q_.backward_weight(ctx.child(0));
  linear_k_.backward_weight(ctx.child(1));
  // v^ = g v / |v|:  dg = v . dv^ / |v|,  dv = (g / |v|) dv^ - (g dg / |v|^2) v.
  const Tensor grad_v_hat = ctx.get("grad_v_hat");
  const Tensor& v = linear_att_.value;
  const double norm = std::sqrt(ops::sum_of_squares(v));
  const double g = normalize_scalar_.value.item();
  const double grad_g = ops::dot(v, grad_v_hat) / norm;
  ops::axpy(g / norm, grad_v_hat, linear_att_.grad);
  ops::axpy(-g * grad_g / (norm * norm), v, linear_att_.grad);
  {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    ops::axpy(1.0, Tensor::full({1}, grad_g, v.dtype(), v.device()), normalize_scalar_.grad);
  }
  ops::axpy(1.0, ctx.get("grad_bias"), normalize_bias_.grad);
  ctx.clear();
}

std::vector<Shape> BahdanauAttention::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() >= 2 && input_shapes[0].rank() == 3 && input_shapes[1].rank() == 3,
             "BahdanauAttention: expected shapes {query [N, Tq, Q], keys [N, Tk, K] (, mask)}");
  return {Shape{input_shapes[0][0], input_shapes[0][1], options_.key_size}};
}

double BahdanauAttention::flops(const std::vector<Shape>& input_shapes) const {
  const std::int64_t N = input_shapes.at(0)[0], Tq = input_shapes.at(0)[1], Tk = input_shapes.at(1)[1];
  const double U = static_cast<double>(options_.units);
  return 2.0 * static_cast<double>(N * Tq) * U * static_cast<double>(options_.query_size) +
         2.0 * static_cast<double>(N * Tk) * U * static_cast<double>(options_.key_size) +
         4.0 * static_cast<double>(N * Tq * Tk) * U +
         2.0 * static_cast<double>(N * Tq * Tk) * static_cast<double>(options_.key_size);
}

std::size_t BahdanauAttention::activation_bytes(const std::vector<Shape>& input_shapes) const {
  const std::int64_t N = input_shapes.at(0)[0], Tq = input_shapes.at(0)[1], Tk = input_shapes.at(1)[1];
  // The projections' inputs (query, keys), their outputs pq and pk, and the probabilities.
  const std::int64_t elements = N * Tq * (options_.query_size + options_.units) +
                                N * Tk * (options_.key_size + options_.units) + N * Tq * Tk;
  return static_cast<std::size_t>(elements) * 4;
}

}  // namespace loom

#pragma GCC diagnostic pop
