// Embedding with padding index against PyTorch; gradient accumulation for repeated ids.
#include <catch2/catch.hpp>

#include <loom/core/ops.h>
#include <loom/layers/embedding.h>

#include "expect.h"

using namespace loom;

TEST_CASE("Embedding matches PyTorch, padding row zero and without gradient") {
  Embedding emb(13, 6, 2);
  emb.initialize(5, 0, "embed");
  const auto w = emb.weight().value.to_double_vector();
  for (int j = 0; j < 6; ++j) CHECK(w[2 * 6 + j] == 0.0);
  Tensor ids = Tensor::from_vector<std::int64_t>({1, 2, 3, 12, 1, 0, 2, 5}, Shape{2, 4});
  Tensor grad_y = test::random_tensor(Shape{2, 4, 6}, 3);
  Context ctx;
  Tensor y = emb.forward({ids}, ctx)[0];
  auto grads = emb.backward({grad_y}, ctx);
  CHECK_FALSE(grads[0].defined());
  auto ref = test::run_torch("layers", {{"x", ids}, {"grad_y", grad_y}, {"param.weight", emb.weight().value}},
                             {{"layer", "embedding"}, {"num", 13}, {"dim", 6}, {"padding_idx", 2}});
  test::expect_close(ref, "y", y);
  test::expect_close(ref, "grad.weight", emb.weight().grad);
}

TEST_CASE("Embedding rejects ids outside the table, naming the layer and the id") {
  Embedding emb(4, 3);
  emb.initialize(1, 0, "embed");
  Context ctx;
  CHECK_THROWS_WITH(emb.forward({Tensor::from_vector<std::int64_t>({1, 4}, Shape{2})}, ctx),
                    Catch::Contains("Embedding 'embed'") && Catch::Contains("id 4"));
}
