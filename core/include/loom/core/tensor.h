// Tensor: a value type over shared storage. Copying a Tensor shares the storage (like a
// shared_ptr); `clone()` copies the data. Every tensor is contiguous row-major; `slice` along
// dim 0 and `reshape` are views (a micro-batch is a view of its batch, no copy). Data moves
// between devices only through an explicit `to(device)`.
#pragma once

#include <cstdint>
#include <algorithm>
#include <memory>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <loom/core/device.h>
#include <loom/core/dtype.h>
#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/shape.h>

namespace loom {

// Owns one allocation; freed (returned to its allocator) when the last Tensor using it goes.
class Storage {
 public:
  explicit Storage(const Allocation& allocation) : allocation_(allocation) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return allocation_.data; }
  std::size_t bytes() const { return allocation_.bytes; }
  Device device() const { return allocation_.device; }
  MemoryCategory category() const { return allocation_.category; }
  bool meta() const { return allocation_.meta; }
  bool pinned() const { return allocation_.pinned; }

 private:
  Allocation allocation_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined tensor: defined() is false

  // Uninitialised storage, charged to the current memory category.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu());
  // A CPU tensor holding a copy of `values` (values.size() must equal shape.numel()).
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
    LOOM_CHECK(static_cast<std::int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
               " values for shape ", shape.str());
    Tensor t = empty(shape, dtype_of<T>::value);
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }

  bool defined() const { return storage_ != nullptr; }
  bool is_meta() const { return storage_ && storage_->meta(); }  // made under a MetaScope (memory.h)
  bool is_pinned() const { return storage_ && storage_->pinned(); }  // page-locked host memory (PinnedHostScope)
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  std::int64_t size(int dim) const { return shape_[dim]; }
  std::int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  std::size_t element_size() const { return dtype_size(dtype_); }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * element_size(); }
  std::int64_t offset() const { return offset_; }  // in elements, into the storage
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Raw pointer to the first element (device memory for CUDA tensors).
  void* raw_data() const;
  // Typed pointer; checks that T matches dtype().
  template <typename T>
  T* data() const {
    LOOM_CHECK(dtype_of<T>::value == dtype_, "tensor of dtype ", dtype_name(dtype_), " accessed as ",
               dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw_data());
  }
  // Host element view; the tensor must be in host memory (require_host).
  template <typename T>
  std::span<T> span() const;
  // Copies the elements to a host vector (converting from the tensor's dtype), from any device.
  std::vector<float> to_float_vector() const;
  std::vector<double> to_double_vector() const;
  // The single element of a one-element tensor, as double.
  double item() const;

  // Views.
  Tensor slice(std::int64_t begin, std::int64_t end) const;  // rows [begin, end) of dim 0
  Tensor reshape(const Shape& shape) const;                 // same numel; -1 may infer one dim
  Tensor flatten_to_2d(int dim) const;                      // [outer(dim), inner(dim)]

  // Copies.
  Tensor clone() const;                  // same device, dtype, current category
  Tensor to(Device device) const;        // explicit device copy (shares storage if same device)
  Tensor to(DType dtype) const;          // cast (copy)
  void copy_from(const Tensor& source);  // same shape and dtype; any devices

  std::string str(int max_elements = 8) const;  // "Tensor f32 cpu [2, 3] {1, 2, ...}"
  bool same_storage(const Tensor& other) const { return storage_ == other.storage_; }

 private:
  Tensor slice_for_print(int max_elements) const;
  Tensor(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype, std::int64_t offset)
      : storage_(std::move(storage)), shape_(shape), dtype_(dtype), offset_(offset) {}

  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::f32;
  std::int64_t offset_ = 0;
};

std::ostream& operator<<(std::ostream& out, const Tensor& tensor);

// Host-only code (file I/O, MPI host buffers, element access) calls this on each tensor it is given:
// a tensor on a device (cuda, or sim standing in for one) is a loom::Error naming `operation` and
// the device. Copy it with `to(Device::cpu())` first.
void require_host(const Tensor& tensor, std::string_view operation);

template <typename T>
std::span<T> Tensor::span() const {
  require_host(*this, "span()");
  return {data<T>(), static_cast<std::size_t>(numel())};
}

// Tensors crossing layer and stage boundaries are lists (GNMT passes several).
using TensorList = std::vector<Tensor>;

}  // namespace loom
