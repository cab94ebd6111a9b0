// Builds against an installed loom: tensors and ops through <loom/...> headers, loom::layers linked.
#include <cstdio>

#include <loom/core/ops.h>
#include <loom/core/tensor.h>

int main() {
  loom::Tensor a = loom::Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  loom::Tensor c = loom::ops::matmul(a, a);
  const auto v = c.to_float_vector();
  const bool ok = v == std::vector<float>{7, 10, 15, 22};
  std::printf("consumer: %s %s\n", c.str().c_str(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
