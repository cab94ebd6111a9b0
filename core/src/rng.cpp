#include <loom/core/rng.h>

#include "backend.h"

namespace loom::rng {

namespace {
void run(RandomKind kind, Tensor& out, std::uint64_t seed, std::uint64_t key, double p0, double p1,
         std::uint64_t first_index) {
  LOOM_CHECK(out.defined() && (out.dtype() == DType::f32 || out.dtype() == DType::f64),
             "random fill needs a defined f32 or f64 tensor, got ", out.defined() ? dtype_name(out.dtype()) : "undefined");
  if (out.device().is_cuda()) {
#ifdef LOOM_WITH_CUDA
    return cuda::random(kind, out, seed, key, p0, p1, first_index);
#else
    LOOM_THROW("tensor on ", out.device().str(), " but this build of loom has no CUDA backend");
#endif
  }
  cpu::random(kind, out, seed, key, p0, p1, first_index);
}
}  // namespace

std::uint64_t stream_key(std::string_view name, std::uint64_t a, std::uint64_t b) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  };
  for (const char c : name) mix(static_cast<unsigned char>(c));
  for (const std::uint64_t v : {a, b})
    for (int i = 0; i < 8; ++i) mix(static_cast<unsigned char>(v >> (8 * i)));
  return hash;
}

void uniform(Tensor& out, std::uint64_t seed, std::uint64_t key, double lo, double hi, std::uint64_t first_index) {
  run(RandomKind::uniform, out, seed, key, lo, hi, first_index);
}
void normal(Tensor& out, std::uint64_t seed, std::uint64_t key, double mean, double stddev, std::uint64_t first_index) {
  run(RandomKind::normal, out, seed, key, mean, stddev, first_index);
}
void bernoulli(Tensor& out, std::uint64_t seed, std::uint64_t key, double p, std::uint64_t first_index) {
  LOOM_CHECK(p >= 0.0 && p <= 1.0, "bernoulli probability ", p, " outside [0, 1]");
  run(RandomKind::bernoulli, out, seed, key, p, 0.0, first_index);
}

}  // namespace loom::rng
