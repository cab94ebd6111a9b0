#include <loom/core/tensor.h>

#include <cstring>
#include <sstream>

#include <loom/core/dtype_dispatch.h>
#include <loom/core/ops.h>

namespace loom {

Storage::~Storage() { deallocate(allocation_); }

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int i = 0; i < shape.rank(); ++i)
    LOOM_CHECK(shape[i] >= 0, "cannot create a tensor of shape ", shape.str());
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  return Tensor(std::make_shared<Storage>(allocate(device, bytes)), shape, dtype, 0);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  if (!t.is_meta()) ops::fill(t, value);
  return t;
}

void* Tensor::raw_data() const {
  LOOM_CHECK(defined(), "access to the data of an undefined tensor");
  LOOM_CHECK(!storage_->meta(), "access to the data of a tensor of a meta build (shape ", shape_.str(),
             "): a meta build has shapes only");
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<std::int64_t>(element_size());
}

namespace {
template <typename Out>
std::vector<Out> host_values(const Tensor& tensor) {
  const Tensor host = tensor.to(Device::cpu());
  std::vector<Out> values(static_cast<std::size_t>(host.numel()));
  const void* p = host.raw_data();
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = load_element<Out>(p, host.dtype(), static_cast<std::int64_t>(i));
  return values;
}
}  // namespace

std::vector<float> Tensor::to_float_vector() const { return host_values<float>(*this); }
std::vector<double> Tensor::to_double_vector() const { return host_values<double>(*this); }

double Tensor::item() const {
  LOOM_CHECK(numel() == 1, "item() of a tensor with ", numel(), " elements (shape ", shape_.str(), ")");
  return host_values<double>(*this)[0];
}

Tensor Tensor::slice(std::int64_t begin, std::int64_t end) const {
  LOOM_CHECK(defined() && rank() >= 1, "slice of a tensor of shape ", shape_.str());
  LOOM_CHECK(0 <= begin && begin <= end && end <= shape_[0], "slice [", begin, ", ", end,
             ") out of range for shape ", shape_.str());
  Shape shape = shape_;
  shape[0] = end - begin;
  return Tensor(storage_, shape, dtype_, offset_ + begin * shape_.inner(1));
}

Tensor Tensor::reshape(const Shape& shape) const {
  std::int64_t known = 1;
  int inferred = -1;
  for (int i = 0; i < shape.rank(); ++i) {
    if (shape[i] == -1) {
      LOOM_CHECK(inferred < 0, "reshape to ", shape.str(), ": more than one -1");
      inferred = i;
    } else {
      known *= shape[i];
    }
  }
  Shape result = shape;
  if (inferred >= 0) {
    LOOM_CHECK(known > 0 && numel() % known == 0, "cannot reshape ", shape_.str(), " to ", shape.str());
    result[inferred] = numel() / known;
  }
  LOOM_CHECK(result.numel() == numel(), "cannot reshape ", shape_.str(), " (", numel(), " elements) to ",
             shape.str());
  return Tensor(storage_, result, dtype_, offset_);
}

Tensor Tensor::flatten_to_2d(int dim) const { return reshape({shape_.outer(dim), shape_.inner(dim)}); }

Tensor Tensor::clone() const {
  Tensor copy = empty(shape_, dtype_, device());
  ops::copy(*this, copy);
  return copy;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  Tensor copy = empty(shape_, dtype_, device);
  ops::copy(*this, copy);
  return copy;
}

Tensor Tensor::to(DType dtype) const {
  Tensor out = empty(shape_, dtype, device());
  ops::cast(*this, out);
  return out;
}

void Tensor::copy_from(const Tensor& source) { ops::copy(source, *this); }

std::string Tensor::str(int max_elements) const {
  std::ostringstream out;
  if (!defined()) return "Tensor(undefined)";
  out << "Tensor " << dtype_name(dtype_) << " " << device().str() << " " << shape_.str() << " {";
  const auto values = host_values<double>(numel() > max_elements ? slice_for_print(max_elements) : *this);
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  if (numel() > max_elements) out << ", ...";
  out << "}";
  return out.str();
}

Tensor Tensor::slice_for_print(int max_elements) const {
  return reshape({numel()}).slice(0, std::min<std::int64_t>(numel(), max_elements));
}

std::ostream& operator<<(std::ostream& out, const Tensor& tensor) { return out << tensor.str(); }

void require_host(const Tensor& tensor, std::string_view operation) {
  if (!tensor.defined() || tensor.device().is_cpu()) return;
  LOOM_THROW(operation, ": the tensor ", dtype_name(tensor.dtype()), " ", tensor.shape().str(), " is on ",
             tensor.device().str(), ", not in host memory; copy it with .to(Device::cpu()) first");
}

}  // namespace loom
