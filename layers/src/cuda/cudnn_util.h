// RAII cuDNN descriptors and the small helpers the layers' cuDNN calls share (only compiled with
// the CUDA backend). Scaling factors follow cuDNN's rule: double for f64 data, float otherwise.
#pragma once

#include <cudnn.h>

#include <loom/core/cuda/context.h>
#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/tensor.h>

namespace loom::cudnn_util {

inline cudnnDataType_t data_type(DType dtype) {
  switch (dtype) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f64: return CUDNN_DATA_DOUBLE;
    default: break;
  }
  LOOM_THROW("cuDNN layers support f32 and f64, not ", dtype_name(dtype));
}

// alpha / beta arguments: one() and zero() point at values of the right type for `dtype`.
class Scalars {
 public:
  explicit Scalars(DType dtype) : is_double_(dtype == DType::f64) {}
  const void* one() const { return is_double_ ? static_cast<const void*>(&d1_) : static_cast<const void*>(&f1_); }
  const void* zero() const { return is_double_ ? static_cast<const void*>(&d0_) : static_cast<const void*>(&f0_); }

 private:
  bool is_double_;
  float f1_ = 1.0f, f0_ = 0.0f;
  double d1_ = 1.0, d0_ = 0.0;
};

class TensorDescriptor {
 public:
  // 4-D NCHW descriptor of `shape` (rank <= 4 shapes are padded with trailing ones).
  TensorDescriptor(const Shape& shape, DType dtype) {
    LOOM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
    int dims[4] = {1, 1, 1, 1};
    for (int i = 0; i < shape.rank() && i < 4; ++i) dims[i] = static_cast<int>(shape[i]);
    LOOM_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, data_type(dtype), dims[0], dims[1], dims[2], dims[3]));
  }
  TensorDescriptor() { LOOM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_)); }  // to be derived
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

class FilterDescriptor {
 public:
  FilterDescriptor(const Shape& shape, DType dtype) {
    LOOM_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_));
    LOOM_CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, data_type(dtype), CUDNN_TENSOR_NCHW, static_cast<int>(shape[0]),
                                                static_cast<int>(shape[1]), static_cast<int>(shape[2]),
                                                static_cast<int>(shape[3])));
  }
  ~FilterDescriptor() { cudnnDestroyFilterDescriptor(desc_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

// Device scratch memory for one cuDNN call, charged to MemoryCategory::workspace.
inline Tensor workspace(std::size_t bytes, Device device) {
  MemoryCategoryScope scope(MemoryCategory::workspace);
  return Tensor::empty({static_cast<std::int64_t>((bytes + 3) / 4)}, DType::f32, device);
}

inline void* data_or_null(const Tensor& t) { return t.numel() > 0 ? t.raw_data() : nullptr; }

}  // namespace loom::cudnn_util
