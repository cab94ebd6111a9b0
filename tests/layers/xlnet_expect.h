// What the two XLNet layer tests share: parameters drawn far from their initial values
// (U(-0.5, 0.5); LayerNorm weights U(0.5, 1.5)), so that a reference comparison exercises every
// term (XLNet's N(0, 0.02) start leaves attention almost uniform), and the comparison of both
// streams' outputs and gradients with tests/layers/reference/xlnet.py.
#pragma once

#include <loom/layers/layer.h>

#include "expect.h"

namespace loom::test {

inline void randomize_parameters(Layer& layer, std::uint64_t key) {
  for (auto& np : layer.parameters()) {
    const bool norm_weight = np.name.find("norm") != std::string::npos && np.name.ends_with("weight");
    np.parameter->value = random_tensor(np.parameter->value.shape(), key++, norm_weight ? 0.5 : -0.5,
                                        norm_weight ? 1.5 : 0.5, np.parameter->value.dtype());
  }
}

// outputs {y_h, y_g, ...} and grads {grad_h, grad_g, ...} against the reference's tensors.
inline void expect_streams_close(const safetensors::File& reference, const TensorList& outputs,
                                 const TensorList& grads, Layer& layer) {
  expect_close(reference, "y_h", outputs.at(0));
  expect_close(reference, "y_g", outputs.at(1));
  expect_close(reference, "grad_h", grads.at(0));
  expect_close(reference, "grad_g", grads.at(1));
  expect_parameter_grads_close(reference, layer);
}

}  // namespace loom::test
