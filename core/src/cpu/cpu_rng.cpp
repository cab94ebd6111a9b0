// CPU random fills: the same philox:: functions the CUDA kernels call, element by element.
#include <loom/core/philox.h>

#include "backend.h"

namespace loom::cpu {

namespace {
template <typename T>
void random_typed(RandomKind kind, T* out, std::int64_t n, std::uint64_t seed, std::uint64_t key, double p0,
                  double p1, std::uint64_t first) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint64_t index = first + static_cast<std::uint64_t>(i);
    switch (kind) {
      case RandomKind::uniform:
        out[i] = static_cast<T>(philox::uniform(seed, key, index, static_cast<float>(p0), static_cast<float>(p1)));
        break;
      case RandomKind::normal:
        out[i] = static_cast<T>(philox::normal(seed, key, index, static_cast<float>(p0), static_cast<float>(p1)));
        break;
      case RandomKind::bernoulli:
        out[i] = philox::bernoulli(seed, key, index, static_cast<float>(p0)) ? T(1) : T(0);
        break;
    }
  }
}
}  // namespace

void random(RandomKind kind, Tensor& out, std::uint64_t seed, std::uint64_t key, double p0, double p1,
            std::uint64_t first_index) {
  if (out.dtype() == DType::f32)
    random_typed<float>(kind, out.data<float>(), out.numel(), seed, key, p0, p1, first_index);
  else
    random_typed<double>(kind, out.data<double>(), out.numel(), seed, key, p0, p1, first_index);
}

}  // namespace loom::cpu
