// MasterWeights (see master_weights.h).
#include <loom/core/memory.h>
#include <loom/core/ops.h>
#include <loom/runtime/master_weights.h>

#include <map>

namespace loom::runtime {

MasterWeights::MasterWeights(const std::vector<NamedParameter>& parameters, DType values) : values_(values) {
  MemoryCategoryScope scope(MemoryCategory::parameters);
  for (const NamedParameter& p : parameters) {
    auto master = std::make_unique<Parameter>();
    master->name = p.parameter->name;
    master->value = p.parameter->value.clone();
    master->grad = p.parameter->grad;  // shared: the model's backward
                                       // accumulates, the optimizer reads
    master->init = p.parameter->init;
    master->trainable = true;
    model_.push_back(p.parameter);
    masters_.push_back(std::move(master));
    names_.push_back(p.name);
  }
}

std::vector<NamedParameter> MasterWeights::parameters() {
  std::vector<NamedParameter> named;
  for (std::size_t i = 0; i < masters_.size(); ++i) named.push_back({names_[i], masters_[i].get()});
  return named;
}

void MasterWeights::publish() {
  for (std::size_t i = 0; i < masters_.size(); ++i) {
    ops::copy(masters_[i]->value, model_[i]->value);
    ops::round_to_(model_[i]->value, values_);
  }
}

void MasterWeights::pull() {
  for (std::size_t i = 0; i < masters_.size(); ++i) ops::copy(model_[i]->value, masters_[i]->value);
}

std::vector<NamedParameter> with_masters(const std::vector<NamedParameter>& checkpointed,
                                         const std::vector<NamedParameter>& masters) {
  std::map<std::string, Parameter*> by_name;
  for (const NamedParameter& m : masters) by_name[m.name] = m.parameter;
  std::vector<NamedParameter> result;
  for (const NamedParameter& p : checkpointed) {
    const auto it = by_name.find(p.name);
    result.push_back(it != by_name.end() && p.parameter->trainable ? NamedParameter{p.name, it->second} : p);
  }
  return result;
}

}  // namespace loom::runtime
