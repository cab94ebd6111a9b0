// Winograd F(2x2, 3x3) convolution on the CPU (see winograd.h). Transforms are written out
// for the fixed matrices
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
//   G   = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
// Layouts: U [16, O, C], V [16, C, T], M [16, O, T] with T the tiles of a chunk of images, tile
// t = (image * tiles_h + ty) * tiles_w + tx covering output rows 2ty..2ty+1, columns 2tx..2tx+1.
#include "cpu/winograd.h"

#include <algorithm>
#include <vector>

#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/core/parallel.h>
#include <loom/core/threads.h>

#include "layer_util.h"

namespace loom::detail::winograd {

namespace {

#ifndef LOOM_WINOGRAD_TILES
#define LOOM_WINOGRAD_TILES 196
#endif
constexpr std::int64_t kTargetTiles = LOOM_WINOGRAD_TILES;  // per GEMM
constexpr std::int64_t kMaxBufferBytes = std::int64_t{32} << 20;

struct Tiling {
  std::int64_t height, width, padding;  // input plane and its zero padding
  std::int64_t out_height, out_width, tiles_h, tiles_w;
  Tiling(std::int64_t h, std::int64_t w, std::int64_t p)
      : height(h), width(w), padding(p), out_height(h + 2 * p - 2), out_width(w + 2 * p - 2),
        tiles_h((out_height + 1) / 2), tiles_w((out_width + 1) / 2) {}
  std::int64_t tiles() const { return tiles_h * tiles_w; }
};

// The tiles one GEMM covers: `rows` rows of tiles (from tile row `ty0`) of each of `count` images
// from `first`. Whole images when several fit in kTargetTiles, else bands of tile rows of one
// image, so that V and M stay small enough to be reused from cache.
struct Chunk {
  std::int64_t first = 0, count = 1, ty0 = 0, rows = 0;
  std::int64_t tiles(const Tiling& g) const { return count * rows * g.tiles_w; }
};

std::vector<Chunk> plan_chunks(std::int64_t batch, const Tiling& g, std::int64_t channels, std::size_t element) {
  std::vector<Chunk> chunks;
  if (g.tiles() >= kTargetTiles) {
    const std::int64_t rows = std::clamp<std::int64_t>(kTargetTiles / g.tiles_w, 1, g.tiles_h);
    for (std::int64_t n = 0; n < batch; ++n)
      for (std::int64_t ty = 0; ty < g.tiles_h; ty += rows) chunks.push_back({n, 1, ty, std::min(rows, g.tiles_h - ty)});
    return chunks;
  }
  const std::int64_t wanted = (kTargetTiles + g.tiles() - 1) / g.tiles();
  const std::int64_t affordable =
      kMaxBufferBytes / std::max<std::int64_t>(16 * channels * g.tiles() * static_cast<std::int64_t>(element), 1);
  const std::int64_t images = std::clamp<std::int64_t>(std::min(wanted, affordable), 1, std::max<std::int64_t>(batch, 1));
  for (std::int64_t n = 0; n < batch; n += images) chunks.push_back({n, std::min(images, batch - n), 0, g.tiles_h});
  return chunks;
}

std::int64_t largest_chunk_tiles(const std::vector<Chunk>& chunks, const Tiling& g) {
  std::int64_t most = 0;
  for (const Chunk& c : chunks) most = std::max(most, c.tiles(g));
  return most;
}

// The transforms work on one row of tiles at a time: the transform along the tile's rows is a
// whole-row vector operation, the one along its columns reads every other element, and each of
// the 16 components of a row of tiles is one contiguous run of V / M (vectorisable loops).

// V [16, C, T] for images [first, first + count) of x [N, C, H, W].
template <typename T>
void transform_inputs(const T* x, std::int64_t channels, const Tiling& g, const Chunk& chunk, T* v) {
  const std::int64_t T_total = chunk.tiles(g), tw = g.tiles_w, span = 2 * tw + 2;
  parallel_for(chunk.count * channels, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<T> rows(4 * span), t(4 * span);
    for (std::int64_t nc = begin; nc < end; ++nc) {
      const std::int64_t n = nc / channels, c = nc % channels;
      const T* plane = x + ((chunk.first + n) * channels + c) * g.height * g.width;
      for (std::int64_t ty = chunk.ty0; ty < chunk.ty0 + chunk.rows; ++ty) {
        // The 4 input rows of this row of tiles, zero-padded: element b is input column b - padding.
        for (int i = 0; i < 4; ++i) {
          T* row = rows.data() + i * span;
          const std::int64_t r = 2 * ty - g.padding + i;
          std::fill(row, row + span, T(0));
          if (r < 0 || r >= g.height) continue;
          const std::int64_t begin = std::max<std::int64_t>(g.padding, 0);
          const std::int64_t end = std::min<std::int64_t>(span, g.width + g.padding);
          std::copy(plane + r * g.width + (begin - g.padding), plane + r * g.width + (end - g.padding), row + begin);
        }
        const T *d0 = rows.data(), *d1 = d0 + span, *d2 = d1 + span, *d3 = d2 + span;
        T *t0 = t.data(), *t1 = t0 + span, *t2 = t1 + span, *t3 = t2 + span;
        for (std::int64_t b = 0; b < span; ++b) {
          t0[b] = d0[b] - d2[b];
          t1[b] = d1[b] + d2[b];
          t2[b] = d2[b] - d1[b];
          t3[b] = d1[b] - d3[b];
        }
        const std::int64_t t_first = (n * chunk.rows + ty - chunk.ty0) * tw;
        for (int i = 0; i < 4; ++i) {
          const T* ti = t.data() + i * span;
          T* v0 = v + ((4 * i + 0) * channels + c) * T_total + t_first;
          T* v1 = v + ((4 * i + 1) * channels + c) * T_total + t_first;
          T* v2 = v + ((4 * i + 2) * channels + c) * T_total + t_first;
          T* v3 = v + ((4 * i + 3) * channels + c) * T_total + t_first;
          for (std::int64_t tx = 0; tx < tw; ++tx) {
            const T a = ti[2 * tx], b = ti[2 * tx + 1], cc = ti[2 * tx + 2], d = ti[2 * tx + 3];
            v0[tx] = a - cc;
            v1[tx] = b + cc;
            v2[tx] = cc - b;
            v3[tx] = b - d;
          }
        }
      }
    }
  });
}

// y tiles = A^T m A (+ bias) from M [16, O, T], clipped at odd output sizes.
template <typename T>
void transform_outputs(const T* m, std::int64_t channels, const Tiling& g, const Chunk& chunk, const T* bias, T* y) {
  const std::int64_t T_total = chunk.tiles(g), tw = g.tiles_w;
  parallel_for(chunk.count * channels, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<T> s(8 * tw), out(2 * tw);
    for (std::int64_t no = begin; no < end; ++no) {
      const std::int64_t n = no / channels, o = no % channels;
      T* plane = y + ((chunk.first + n) * channels + o) * g.out_height * g.out_width;
      const T b = bias ? bias[o] : T(0);
      for (std::int64_t ty = chunk.ty0; ty < chunk.ty0 + chunk.rows; ++ty) {
        const std::int64_t t_first = (n * chunk.rows + ty - chunk.ty0) * tw;
        auto component = [&](int i, int j) { return m + ((4 * i + j) * channels + o) * T_total + t_first; };
        for (int j = 0; j < 4; ++j) {  // s[0][j], s[1][j]: the transform along the tile's rows
          const T *m0 = component(0, j), *m1 = component(1, j), *m2 = component(2, j), *m3 = component(3, j);
          T *s0 = s.data() + j * tw, *s1 = s.data() + (4 + j) * tw;
          for (std::int64_t tx = 0; tx < tw; ++tx) {
            s0[tx] = m0[tx] + m1[tx] + m2[tx];
            s1[tx] = m1[tx] - m2[tx] - m3[tx];
          }
        }
        for (int i = 0; i < 2; ++i) {
          const std::int64_t r = 2 * ty + i;
          if (r >= g.out_height) break;
          const T *a = s.data() + 4 * i * tw, *bb = a + tw, *c = bb + tw, *d = c + tw;
          for (std::int64_t tx = 0; tx < tw; ++tx) {
            out[2 * tx] = a[tx] + bb[tx] + c[tx] + b;
            out[2 * tx + 1] = bb[tx] - c[tx] - d[tx] + b;
          }
          std::copy(out.begin(), out.begin() + g.out_width, plane + r * g.out_width);
        }
      }
    }
  });
}

// dM [16, O, T] = A e A^T for the output-gradient tiles e (zero beyond the output).
template <typename T>
void transform_output_gradients(const T* grad_y, std::int64_t channels, const Tiling& g, const Chunk& chunk, T* dm) {
  const std::int64_t T_total = chunk.tiles(g), tw = g.tiles_w;
  parallel_for(chunk.count * channels, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<T> e(2 * 2 * tw), r(4 * 2 * tw);
    for (std::int64_t no = begin; no < end; ++no) {
      const std::int64_t n = no / channels, o = no % channels;
      const T* plane = grad_y + ((chunk.first + n) * channels + o) * g.out_height * g.out_width;
      for (std::int64_t ty = chunk.ty0; ty < chunk.ty0 + chunk.rows; ++ty) {
        for (int i = 0; i < 2; ++i) {  // the two output rows, zero beyond the output
          T* row = e.data() + i * 2 * tw;
          std::fill(row, row + 2 * tw, T(0));
          if (2 * ty + i < g.out_height)
            std::copy(plane + (2 * ty + i) * g.out_width, plane + (2 * ty + i + 1) * g.out_width, row);
        }
        const T *e0 = e.data(), *e1 = e0 + 2 * tw;
        T *r0 = r.data(), *r1 = r0 + 2 * tw, *r2 = r1 + 2 * tw, *r3 = r2 + 2 * tw;
        for (std::int64_t k = 0; k < 2 * tw; ++k) {  // A applied to the tile's rows
          r0[k] = e0[k];
          r1[k] = e0[k] + e1[k];
          r2[k] = e0[k] - e1[k];
          r3[k] = -e1[k];
        }
        const std::int64_t t_first = (n * chunk.rows + ty - chunk.ty0) * tw;
        for (int i = 0; i < 4; ++i) {
          const T* ri = r.data() + i * 2 * tw;
          T* d0 = dm + ((4 * i + 0) * channels + o) * T_total + t_first;
          T* d1 = dm + ((4 * i + 1) * channels + o) * T_total + t_first;
          T* d2 = dm + ((4 * i + 2) * channels + o) * T_total + t_first;
          T* d3 = dm + ((4 * i + 3) * channels + o) * T_total + t_first;
          for (std::int64_t tx = 0; tx < tw; ++tx) {
            const T a = ri[2 * tx], b = ri[2 * tx + 1];
            d0[tx] = a;
            d1[tx] = a + b;
            d2[tx] = a - b;
            d3[tx] = -b;
          }
        }
      }
    }
  });
}

// u[16] = G g G^T for one 3x3 filter g (row-major).
template <typename T>
void filter_tile(const T* g, T* u) {
  T t[4][3];
  for (int j = 0; j < 3; ++j) {
    t[0][j] = g[j];
    t[1][j] = T(0.5) * (g[j] + g[3 + j] + g[6 + j]);
    t[2][j] = T(0.5) * (g[j] - g[3 + j] + g[6 + j]);
    t[3][j] = g[6 + j];
  }
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = t[i][0];
    u[4 * i + 1] = T(0.5) * (t[i][0] + t[i][1] + t[i][2]);
    u[4 * i + 2] = T(0.5) * (t[i][0] - t[i][1] + t[i][2]);
    u[4 * i + 3] = t[i][2];
  }
}

// g[9] += G^T du G for one transformed-filter gradient du[16].
template <typename T>
void filter_tile_adjoint(const T* du, T* g) {
  T s[3][4];
  for (int j = 0; j < 4; ++j) {
    const T d0 = du[j], d1 = du[4 + j], d2 = du[8 + j], d3 = du[12 + j];
    s[0][j] = d0 + T(0.5) * (d1 + d2);
    s[1][j] = T(0.5) * (d1 - d2);
    s[2][j] = T(0.5) * (d1 + d2) + d3;
  }
  for (int i = 0; i < 3; ++i) {
    g[3 * i + 0] += s[i][0] + T(0.5) * (s[i][1] + s[i][2]);
    g[3 * i + 1] += T(0.5) * (s[i][1] - s[i][2]);
    g[3 * i + 2] += T(0.5) * (s[i][1] + s[i][2]) + s[i][3];
  }
}

// The [16, rows, cols] view of the first 16 * rows * cols elements of a flat buffer.
Tensor batched_view(const Tensor& flat, std::int64_t rows, std::int64_t cols) {
  return flat.slice(0, 16 * rows * cols).reshape({16, rows, cols});
}

}  // namespace

bool applies(std::int64_t kernel_h, std::int64_t kernel_w, std::int64_t stride_h, std::int64_t stride_w,
             std::int64_t dilation_h, std::int64_t dilation_w, std::int64_t padding_h, std::int64_t padding_w,
             std::int64_t groups) {
  return kernel_h == 3 && kernel_w == 3 && stride_h == 1 && stride_w == 1 && dilation_h == 1 && dilation_w == 1 &&
         groups == 1 && padding_h == padding_w && padding_h <= 2;
}

Tensor transform_filter(const Tensor& weight, bool backward_data) {
  const std::int64_t out = weight.size(0), in = weight.size(1);
  Tensor u = Tensor::empty({16, backward_data ? in : out, backward_data ? out : in}, weight.dtype());
  dispatch_floating(weight.dtype(), "winograd filter transform", [&]<typename T>(T) {
    const T* w = weight.data<T>();
    T* dst = u.data<T>();
    T tile[16];
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t c = 0; c < in; ++c) {
        const T* g = w + (o * in + c) * 9;
        if (backward_data) {
          T rotated[9];
          for (int k = 0; k < 9; ++k) rotated[k] = g[8 - k];
          filter_tile(rotated, tile);
          for (int xi = 0; xi < 16; ++xi) dst[(xi * in + c) * out + o] = tile[xi];
        } else {
          filter_tile(g, tile);
          for (int xi = 0; xi < 16; ++xi) dst[(xi * out + o) * in + c] = tile[xi];
        }
      }
  });
  return u;
}

// Chunks are spread over the pool whole: each thread transforms, multiplies and transforms back
// its own chunks in its own buffers (cache-resident; the inner loops and GEMMs then run inline),
// one parallel region per pass instead of three per chunk. With fewer chunks than threads the
// chunks run in turn and each step is spread over the pool instead.
bool chunks_in_parallel(std::size_t chunks) { return chunks >= 2 * static_cast<std::size_t>(num_threads()); }

void convolve(const Tensor& x, const Tensor& u, std::int64_t padding, const Tensor& bias, Tensor& y) {
  const ops::GemmOperandScope exact(DType::f32);  // a convolution: f32 under mixed precision, as cuDNN's on a GPU
  const std::int64_t batch = x.size(0), in = x.size(1), out = u.size(1);
  const Tiling g(x.size(2), x.size(3), padding);
  const std::vector<Chunk> chunks = plan_chunks(batch, g, std::max(in, out), x.element_size());
  const std::int64_t most = largest_chunk_tiles(chunks, g);
  dispatch_floating(x.dtype(), "winograd convolution", [&]<typename T>(T) {
    auto run = [&](std::int64_t first, std::int64_t last) {
      MemoryCategoryScope scope(MemoryCategory::workspace);
      const Tensor inputs = Tensor::empty({16 * in * most}, x.dtype());
      const Tensor products = Tensor::empty({16 * out * most}, x.dtype());
      for (std::int64_t i = first; i < last; ++i) {
        const Chunk& chunk = chunks[static_cast<std::size_t>(i)];
        const std::int64_t tiles = chunk.tiles(g);
        Tensor v = batched_view(inputs, in, tiles), m = batched_view(products, out, tiles);
        transform_inputs(x.data<T>(), in, g, chunk, v.data<T>());
        ops::gemm_strided_batched(u, false, v, false, m);
        transform_outputs(m.data<T>(), out, g, chunk, bias.defined() ? bias.data<T>() : nullptr, y.data<T>());
      }
    };
    const auto n = static_cast<std::int64_t>(chunks.size());
    if (chunks_in_parallel(chunks.size()))
      parallel_for(n, 1, run);
    else
      run(0, n);
  });
}

void accumulate_filter_gradient(const Tensor& x, const Tensor& grad_y, std::int64_t padding, Tensor& weight_grad) {
  const ops::GemmOperandScope exact(DType::f32);  // a convolution: f32 under mixed precision, as cuDNN's on a GPU
  const std::int64_t batch = x.size(0), in = x.size(1), out = grad_y.size(1);
  const Tiling g(x.size(2), x.size(3), padding);
  const std::vector<Chunk> chunks = plan_chunks(batch, g, std::max(in, out), x.element_size());
  const std::int64_t most = largest_chunk_tiles(chunks, g);
  const auto n = static_cast<std::int64_t>(chunks.size());
  // A fixed split of the chunks into slots, each summing its own dU, added up in slot order: the
  // result depends on the thread count only, not on which thread ran what.
  const std::int64_t slots = chunks_in_parallel(chunks.size()) ? num_threads() : 1;
  std::vector<Tensor> grad_u(static_cast<std::size_t>(slots));
  {
    MemoryCategoryScope scope(MemoryCategory::workspace);
    for (Tensor& partial : grad_u) partial = Tensor::zeros({16, out, in}, x.dtype());
  }
  dispatch_floating(x.dtype(), "winograd filter gradient", [&]<typename T>(T) {
    auto run = [&](std::int64_t first_slot, std::int64_t last_slot) {
      MemoryCategoryScope scope(MemoryCategory::workspace);
      const Tensor inputs = Tensor::empty({16 * in * most}, x.dtype());
      const Tensor output_grads = Tensor::empty({16 * out * most}, x.dtype());
      for (std::int64_t slot = first_slot; slot < last_slot; ++slot)
        for (std::int64_t i = slot * n / slots; i < (slot + 1) * n / slots; ++i) {
          const Chunk& chunk = chunks[static_cast<std::size_t>(i)];
          const std::int64_t tiles = chunk.tiles(g);
          Tensor v = batched_view(inputs, in, tiles), dm = batched_view(output_grads, out, tiles);
          transform_inputs(x.data<T>(), in, g, chunk, v.data<T>());
          transform_output_gradients(grad_y.data<T>(), out, g, chunk, dm.data<T>());
          ops::gemm_strided_batched(dm, false, v, true, grad_u[static_cast<std::size_t>(slot)], 1.0, 1.0);
        }
    };
    if (slots > 1)
      parallel_for(slots, 1, run);
    else
      run(0, 1);
    for (std::int64_t slot = 1; slot < slots; ++slot) ops::axpy(1.0, grad_u[static_cast<std::size_t>(slot)], grad_u[0]);
    const T* du = grad_u[0].data<T>();
    T* dw = weight_grad.data<T>();
    T tile[16];
    for (std::int64_t o = 0; o < out; ++o)
      for (std::int64_t c = 0; c < in; ++c) {
        for (int xi = 0; xi < 16; ++xi) tile[xi] = du[(xi * out + o) * in + c];
        filter_tile_adjoint(tile, dw + (o * in + c) * 9);
      }
  });
}

}  // namespace loom::detail::winograd
