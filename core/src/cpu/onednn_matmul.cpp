// bf16 matmul, and f32 matmul on a reordered right operand, through oneDNN (see onednn_matmul.h). A primitive per shape, transposition, alpha and
// beta, from a cache; the operands are described in place by their strides (a transposed operand is
// a strided view, no copy), alpha is oneDNN's output scale and beta its sum post-op.
#include "cpu/onednn_matmul.h"

#include <memory>
#include <string>

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <loom/core/bounded_cache.h>
#include <loom/core/memory.h>
#include <loom/core/threads.h>

namespace loom::cpu::onednn {

namespace {

using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

// op(x) as [batch,] rows × cols over storage with leading dimension ld (x itself cols × rows when
// transposed), batch items `stride` elements apart.
memory::desc operand(const GemmShape& g, std::int64_t rows, std::int64_t cols, bool transposed, std::int64_t ld,
                     std::int64_t stride, memory::data_type type) {
  const memory::dim row_step = transposed ? 1 : ld, col_step = transposed ? ld : 1;
  if (g.batch == 1) return {{rows, cols}, type, memory::dims{row_step, col_step}};
  return {{g.batch, rows, cols}, type, memory::dims{stride, row_step, col_step}};
}

struct Leading {
  std::int64_t a, b, c;
};

Leading leading(const GemmShape& g) {
  return {std::max<std::int64_t>(g.transpose_a ? g.m : g.k, 1), std::max<std::int64_t>(g.transpose_b ? g.k : g.n, 1),
          std::max<std::int64_t>(g.n, 1)};
}

struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

// alpha as oneDNN's output scale, beta as its sum post-op, the scratchpad loom's.
dnnl::primitive_attr matmul_attr(const GemmShape& g) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.alpha != 1.0) attr.set_output_scales(0, {static_cast<float>(g.alpha)});
  if (g.beta != 0.0) {
    dnnl::post_ops accumulate;
    accumulate.append_sum(static_cast<float>(g.beta));
    attr.set_post_ops(accumulate);
  }
  return attr;
}

Matmul make_matmul(const GemmShape& g) {
  const Leading ld = leading(g);
  const auto bf16 = memory::data_type::bf16;
  const memory::desc a = operand(g, g.m, g.k, g.transpose_a, ld.a, g.stride_a, bf16);
  const memory::desc b = operand(g, g.k, g.n, g.transpose_b, ld.b, g.stride_b, bf16);
  const memory::desc c = operand(g, g.m, g.n, false, ld.c, g.stride_c, memory::data_type::f32);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), matmul_attr(g), engine());
  return {pd, dnnl::matmul(pd)};
}

// The f32 matmul for a plain a and c and whatever layout of b it likes best (format any).
Matmul make_packed_matmul(const GemmShape& g) {
  const Leading ld = leading(g);
  const auto f32 = memory::data_type::f32;
  const memory::desc a = operand(g, g.m, g.k, false, ld.a, 0, f32);
  const memory::desc b({g.k, g.n}, f32, memory::format_tag::any);
  const memory::desc c = operand(g, g.m, g.n, false, ld.c, 0, f32);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), matmul_attr(g), engine());
  return {pd, dnnl::matmul(pd)};
}

memory wrap(const memory::desc& desc, const void* data) { return memory(desc, engine(), const_cast<void*>(data)); }

// Runs `matmul` on loom's threads with a scratchpad from loom's allocator.
void execute(const Matmul& matmul, const void* a, const void* b, void* c) {
  omp_set_num_threads(num_threads());
  MemoryCategoryScope scratch(MemoryCategory::workspace);
  const memory::desc pad_desc = matmul.pd.scratchpad_desc();
  Tensor pad = Tensor::empty({static_cast<std::int64_t>(pad_desc.get_size() / 4 + 1)}, DType::f32);
  dnnl::stream stream(engine());
  matmul.primitive.execute(stream, {{DNNL_ARG_SRC, wrap(matmul.pd.src_desc(), a)},
                                    {DNNL_ARG_WEIGHTS, wrap(matmul.pd.weights_desc(), b)},
                                    {DNNL_ARG_DST, wrap(matmul.pd.dst_desc(), c)},
                                    {DNNL_ARG_SCRATCHPAD, wrap(pad_desc, pad.raw_data())}});
  stream.wait();
}

std::string cache_key(const GemmShape& g) {
  std::string key = std::string(g.transpose_a ? "t" : "n") + (g.transpose_b ? "t" : "n");
  for (std::int64_t v : {g.m, g.n, g.k, g.batch, g.stride_a, g.stride_b, g.stride_c}) key += std::to_string(v) + ",";
  return key + std::to_string(g.alpha) + "," + std::to_string(g.beta);
}

}  // namespace

bool bf16_matmul_supported() {
  static const bool supported = [] {
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bf16) == bf16;
  }();
  return supported;
}

void matmul_bf16(const GemmShape& g, const std::uint16_t* a, const std::uint16_t* b, float* c) {
  static BoundedCache<Matmul> cache;
  execute(cache.get(cache_key(g), [&] { return make_matmul(g); }), a, b, c);
}

struct PackedRight {
  Matmul matmul;
  Tensor b;  // in matmul.pd.weights_desc()'s layout
};

std::shared_ptr<const PackedRight> pack_right_f32(const GemmShape& g, const float* b) {
  static BoundedCache<Matmul> cache;
  auto packed = std::make_shared<PackedRight>();
  packed->matmul = cache.get(cache_key(g), [&] { return make_packed_matmul(g); });
  const memory::desc layout = packed->matmul.pd.weights_desc();
  {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    packed->b = Tensor::empty({static_cast<std::int64_t>(layout.get_size() / 4 + 1)}, DType::f32);
  }
  const Leading ld = leading(g);
  memory plain = wrap(operand(g, g.k, g.n, g.transpose_b, ld.b, 0, memory::data_type::f32), b);
  memory blocked = wrap(layout, packed->b.raw_data());
  omp_set_num_threads(num_threads());
  dnnl::stream stream(engine());
  dnnl::reorder(plain, blocked).execute(stream, plain, blocked);
  stream.wait();
  return packed;
}

void matmul_packed_f32(const PackedRight& packed, const float* a, float* c) {
  execute(packed.matmul, a, packed.b.raw_data(), c);
}

}  // namespace loom::cpu::onednn
