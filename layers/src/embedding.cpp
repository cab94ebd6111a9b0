// Embedding lookup (gather) and its gradient (scatter-add into the table, skipping padding_idx).
#include <loom/layers/embedding.h>

#include <cstring>

#include "cuda/kernels.h"
#include "layer_util.h"

namespace loom {

namespace {

template <typename Index>
std::vector<std::int64_t> host_ids(const Tensor& ids) {
  MemoryCategoryScope scratch(MemoryCategory::workspace);  // a host copy for the index checks
  const Tensor h = ids.to(Device::cpu());
  const Index* p = h.data<Index>();
  return std::vector<std::int64_t>(p, p + h.numel());
}

std::vector<std::int64_t> ids_on_host(const Tensor& ids) {
  if (ids.dtype() == DType::i64) return host_ids<std::int64_t>(ids);
  return host_ids<std::int32_t>(ids);
}

}  // namespace

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim, std::int64_t padding_idx)
    : num_embeddings_(num_embeddings), dim_(dim), padding_idx_(padding_idx) {
  LOOM_CHECK(num_embeddings > 0 && dim > 0, "Embedding: sizes must be positive, got ", num_embeddings, " x ", dim);
  if (padding_idx < 0 && padding_idx != -1) padding_idx_ = num_embeddings + padding_idx;  // PyTorch's negative form
  LOOM_CHECK(padding_idx_ >= -1 && padding_idx_ < num_embeddings, "Embedding: padding_idx ", padding_idx,
             " outside [0, ", num_embeddings, ")");
  Init init = Init::normal(0.0, 1.0);
  init.zero_row = padding_idx_;
  weight_ = make_parameter("weight", Shape{num_embeddings, dim}, init);
}

Tensor Embedding::forward_tensor(const Tensor& ids, Context& ctx) {
  LOOM_CHECK(ids.dtype() == DType::i64 || ids.dtype() == DType::i32, describe(), ": ids must be i64 or i32, got ",
             dtype_name(ids.dtype()));
  LOOM_CHECK(ids.device() == weight_.value.device(), describe(), ": ids are on ", ids.device().str(),
             " but weight is on ", weight_.value.device().str());
  const Tensor& table = weight_.value;
  std::vector<std::int64_t> out_dims = ids.shape().vec();
  out_dims.push_back(dim_);
  Tensor y = Tensor::empty(Shape(out_dims), table.dtype(), table.device());
  const std::vector<std::int64_t> id = ids_on_host(ids);
  for (std::size_t i = 0; i < id.size(); ++i)
    LOOM_CHECK(id[i] >= 0 && id[i] < num_embeddings_, describe(), ": id ", id[i], " at position ", i,
               " outside the table of ", num_embeddings_, " rows");
  if (ids.device().is_cuda()) {
    cuda_kernels::embedding_forward(ids, table, y);
  } else {
    const std::size_t row_bytes = static_cast<std::size_t>(dim_) * table.element_size();
    const char* src = static_cast<const char*>(table.raw_data());
    char* dst = static_cast<char*>(y.raw_data());
    for (std::size_t i = 0; i < id.size(); ++i)
      std::memcpy(dst + i * row_bytes, src + static_cast<std::size_t>(id[i]) * row_bytes, row_bytes);
  }
  ctx.save("ids", ids);
  return y;
}

Tensor Embedding::backward_input_tensor(const Tensor& g, Context& ctx) {
  const Tensor ids = ctx.get("ids");
  std::vector<std::int64_t> expected = ids.shape().vec();
  expected.push_back(dim_);
  detail::check_same_shape(*this, "output gradient", g, Shape(expected));
  detail::check_like(*this, "output gradient", g, weight_.grad, "weight gradient");
  if (g.device().is_cuda()) {
    cuda_kernels::embedding_backward(ids, g, padding_idx_, weight_.grad);
  } else {
    const std::vector<std::int64_t> id = ids_on_host(ids);
    dispatch_floating(g.dtype(), describe(), [&]<typename T>(T) {
      const T* gp = g.data<T>();
      T* w = weight_.grad.data<T>();
      for (std::size_t i = 0; i < id.size(); ++i) {
        if (id[i] == padding_idx_) continue;
        T* row = w + id[i] * dim_;
        const T* gr = gp + static_cast<std::int64_t>(i) * dim_;
        for (std::int64_t j = 0; j < dim_; ++j) row[j] += gr[j];
      }
    });
  }
  ctx.clear();
  return Tensor();
}

std::vector<Shape> Embedding::output_shapes(const std::vector<Shape>& input_shapes) const {
  LOOM_CHECK(input_shapes.size() == 1, describe(), ": expects one input shape");
  std::vector<std::int64_t> dims = input_shapes[0].vec();
  dims.push_back(dim_);
  return {Shape(dims)};
}

double Embedding::flops(const std::vector<Shape>& input_shapes) const {
  return static_cast<double>(input_shapes.at(0).numel() * dim_);
}

std::size_t Embedding::activation_bytes(const std::vector<Shape>& input_shapes) const {
  return static_cast<std::size_t>(input_shapes.at(0).numel()) * 8;
}

}  // namespace loom
