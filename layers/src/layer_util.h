// Private helpers shared by the layer implementations: argument checks whose messages name the
// layer, the tensor and both shapes. The dtype dispatch of the CPU kernels (f32 for training, f64
// for the gradient checks) is core's dispatch_floating (loom/core/dtype_dispatch.h).
#pragma once

#include <string_view>

#include <loom/core/dtype_dispatch.h>
#include <loom/base/error.h>
#include <loom/core/tensor.h>
#include <loom/layers/layer.h>

namespace loom::detail {

inline void check_inputs(const Layer& layer, const TensorList& inputs, std::size_t expected) {
  LOOM_CHECK(inputs.size() == expected, layer.describe(), ": expected ", expected, " input tensor(s), got ",
             inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    LOOM_CHECK(inputs[i].defined(), layer.describe(), ": input ", i, " is undefined");
}

// The tensor matches the parameter's dtype and device.
inline void check_like(const Layer& layer, std::string_view what, const Tensor& x, const Tensor& reference,
                       std::string_view reference_name) {
  LOOM_CHECK(x.dtype() == reference.dtype(), layer.describe(), ": ", what, " has dtype ", dtype_name(x.dtype()),
             " but ", reference_name, " has ", dtype_name(reference.dtype()));
  LOOM_CHECK(x.device() == reference.device(), layer.describe(), ": ", what, " is on ", x.device().str(), " but ",
             reference_name, " is on ", reference.device().str());
}

// The last dim of x equals n (e.g. a Linear's in_features).
inline void check_last_dim(const Layer& layer, std::string_view what, const Tensor& x, std::int64_t n,
                           std::string_view parameter, const Shape& parameter_shape) {
  LOOM_CHECK(x.rank() >= 1 && x.size(-1) == n, layer.describe(), ": ", what, " shape ", x.shape().str(),
             " does not match ", parameter, " shape ", parameter_shape.str(), " (last dim must be ", n, ")");
}

inline void check_same_shape(const Layer& layer, std::string_view what, const Tensor& x, const Shape& expected) {
  LOOM_CHECK(x.shape() == expected, layer.describe(), ": ", what, " has shape ", x.shape().str(), ", expected ",
             expected.str());
}

inline Tensor empty_like(const Tensor& x) { return Tensor::empty(x.shape(), x.dtype(), x.device()); }

inline std::size_t f32_bytes(const Shape& shape) { return static_cast<std::size_t>(shape.numel()) * 4; }

}  // namespace loom::detail
