// The references' tied parameters, made as PyTorch makes them (module.decoder.weight =
// module.embedding.weight): the copy is the canonical's value and gradient tensors, so both layers'
// backwards accumulate into one gradient and the optimizer sees the canonical only. Independent of
// the runtime's ties (runtime/tied_parameters.h), which keep separate gradients and add them.
#pragma once

#include <algorithm>
#include <vector>

#include <loom/base/error.h>
#include <loom/layers/optimizer.h>
#include <loom/models/model.h>

namespace loom::test {

// Ties the whole model's parameters; returns its trainable parameters without the copies.
inline std::vector<NamedParameter> tie_as_pytorch(const ModelSpec& spec, Layer& model) {
  const std::vector<NamedParameter> all = model.parameters();
  const auto find = [&](const std::string& name) {
    const auto it = std::find_if(all.begin(), all.end(), [&](const NamedParameter& p) { return p.name == name; });
    LOOM_CHECK(it != all.end(), "reference: no parameter ", name);
    return it->parameter;
  };
  for (const ParameterTie& tie : spec.ties) {
    Parameter* copy = find(tie.copy);
    copy->value = find(tie.canonical)->value;
    copy->grad = find(tie.canonical)->grad;
  }
  std::vector<NamedParameter> trainable;
  for (const NamedParameter& p : trainable_parameters(model))
    if (std::none_of(spec.ties.begin(), spec.ties.end(), [&](const ParameterTie& t) { return t.copy == p.name; }))
      trainable.push_back(p);
  return trainable;
}

}  // namespace loom::test
