// XLNet blocks: the layer against PyTorch (tests/layers/reference/xlnet.py, post-LN with the
// attention, LayerNorms and feed-forward shared by the two streams), every block against f64
// finite differences with dropout, and the factorisation orders: permutations drawn from
// (seed, step, global sample) alone, so a micro-batch gets the rows the whole batch would.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include <loom/core/ops.h>
#include <loom/layers/xlnet.h>

#include "expect.h"
#include "gradcheck.h"
#include "xlnet_expect.h"

using namespace loom;

namespace {

XLNetOptions small(double dropout) {
  XLNetOptions o;
  o.vocab = 11;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 12;
  o.dropout = dropout;
  return o;
}

Tensor ranks(DType dtype) { return Tensor::from_vector<double>({3, 1, 0, 2, 0, 2, 3, 1}, Shape{2, 4}).to(dtype); }

test::GradCheckOptions check_options() {
  test::GradCheckOptions options;
  options.max_elements = 16;
  return options;
}

}  // namespace

TEST_CASE("XLNetLayer matches PyTorch") {
  XLNetOptions o = small(0.0);
  o.d_model = 16;
  o.heads = 4;
  o.d_ff = 24;
  XLNetLayer layer(o);
  layer.initialize(5, 1, "");
  test::randomize_parameters(layer, 200);
  Tensor h = test::random_tensor(Shape{2, 4, 16}, 201), g = test::random_tensor(Shape{2, 4, 16}, 202);
  Tensor grad_h = test::random_tensor(Shape{2, 4, 16}, 203), grad_g = test::random_tensor(Shape{2, 4, 16}, 204);
  Context ctx;
  const TensorList y = layer.forward({h, g, ranks(DType::f32)}, ctx);
  REQUIRE(y.size() == 3);
  CHECK(y[2].to_double_vector() == ranks(DType::f32).to_double_vector());
  const Tensor grad_ranks = test::random_tensor(Shape{2, 4}, 205);
  const TensorList grads = layer.backward({grad_h, grad_g, grad_ranks}, ctx);
  REQUIRE(grads.size() == 3);
  CHECK(ops::max_abs_error(grads[2], grad_ranks) == 0.0);  // passed through
  safetensors::NamedTensors in{
      {"h", h}, {"g", g}, {"ranks", ranks(DType::f32)}, {"grad_h", grad_h}, {"grad_g", grad_g}};
  test::add_parameters(in, layer);
  auto ref =
      test::run_torch("xlnet", in, {{"embed_dim", 16}, {"heads", 4}, {"block", true}, {"eps", o.layer_norm_eps}});
  test::expect_streams_close(ref, y, grads, layer);
}

TEST_CASE("XLNet blocks pass the f64 gradient check with dropout") {
  const XLNetOptions o = small(0.2);
  const TensorList streams{test::random_tensor(Shape{2, 4, 8}, 210, -1, 1, DType::f64),
                           test::random_tensor(Shape{2, 4, 8}, 211, -1, 1, DType::f64), ranks(DType::f64)};
  XLNetLayer layer(o);
  layer.initialize(1, 1, "layer");
  layer.to(DType::f64);
  test::randomize_parameters(layer, 212);
  auto report = test::gradcheck(layer, streams, check_options());
  INFO("layer " << report.str());
  CHECK(report.ok);

  XLNetEmbedding embedding(o);
  embedding.initialize(1, 0, "embedding");
  embedding.to(DType::f64);
  report = test::gradcheck(embedding, {Tensor::from_vector<std::int64_t>({1, 5, 10, 0, 5, 5, 2, 7}, Shape{2, 4})},
                           check_options());
  INFO("embedding " << report.str());
  CHECK(report.ok);

  XLNetHead head(o);
  head.initialize(1, 2, "head");
  head.to(DType::f64);
  report = test::gradcheck(head, streams, check_options());
  INFO("head " << report.str());
  CHECK(report.ok);
}

TEST_CASE("factorisation orders are permutations keyed by (seed, step, sample) only") {
  const auto first = factorisation_ranks(7, 3, 12, 9);
  CHECK(std::set<std::int64_t>(first.begin(), first.end()).size() == 9);
  CHECK(*std::max_element(first.begin(), first.end()) == 8);
  CHECK(factorisation_ranks(7, 3, 12, 9) == first);
  CHECK(factorisation_ranks(7, 3, 13, 9) != first);
  CHECK(factorisation_ranks(7, 4, 12, 9) != first);
  CHECK(factorisation_ranks(8, 3, 12, 9) != first);
}

TEST_CASE("XLNetEmbedding: the query stream starts as the mask embedding, orders follow the global sample") {
  XLNetEmbedding embedding(small(0.0));
  embedding.initialize(2, 0, "embedding");
  const Tensor tokens = Tensor::from_vector<std::int64_t>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 1}, Shape{3, 4});
  Context whole;
  whole.seed = 5;
  whole.step = 2;
  whole.first_sample = 6;
  const TensorList all = embedding.forward({tokens}, whole);
  const auto mask = embedding.mask_embedding().value.to_double_vector();
  const auto g = all[1].to_double_vector();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == mask[i % mask.size()]);
  const auto rank = all[2].to_double_vector();
  for (std::int64_t row = 0; row < 3; ++row) {
    const auto expected = factorisation_ranks(5, 2, 6 + row, 4);
    for (std::int64_t t = 0; t < 4; ++t)
      CHECK(rank[static_cast<std::size_t>(row * 4 + t)] == static_cast<double>(expected[static_cast<std::size_t>(t)]));
  }
  Context part;
  part.seed = 5;
  part.step = 2;
  part.first_sample = 7;
  const TensorList rows = embedding.forward({tokens.slice(1, 3)}, part);
  CHECK(rows[2].to_double_vector() == std::vector<double>(rank.begin() + 4, rank.end()));
  CHECK(rows[0].to_double_vector() == all[0].slice(1, 3).to_double_vector());
}
