// --zero 1 checkpoints (see zero_checkpoint.h).
#include "zero_checkpoint.h"

#include <map>
#include <set>
#include <string>

#include <loom/core/memory.h>
#include <loom/layers/checkpoint.h>

namespace loom::runtime::detail {

namespace {

// The state kinds ("exp_avg", "momentum_buffer", ...), as suffixes of the slice's state names: the
// same on every replica (one optimizer type; every slice meets at least one parameter).
std::set<std::string> state_suffixes(const ZeroShard& shard, const std::map<std::string, Tensor>& state) {
  std::set<std::string> suffixes;
  for (const NamedParameter& view : shard.slice())
    for (const auto& [name, tensor] : state)
      if (name.rfind(view.name + ".", 0) == 0) suffixes.insert(name.substr(view.name.size()));
  return suffixes;
}

}  // namespace

StageTensors gather_stage_tensors(ZeroShard& shard, OptimizerStep& step, const std::vector<NamedParameter>& saved) {
  std::map<std::string, Tensor> state, masters;
  for (auto& [name, tensor] : step.optimizer().state()) state[name] = tensor;
  if (step.has_masters())
    for (const NamedParameter& m : step.updated()) masters[m.name] = m.parameter->value;
  std::map<std::string, std::size_t> index;  // trainable parameter -> its place in the shard's order
  for (std::size_t i = 0; i < shard.parameters().size(); ++i) index[shard.parameters()[i].name] = i;

  StageTensors out;
  MemoryCategoryScope staging(MemoryCategory::communication);
  std::set<std::string> saved_names;
  for (const NamedParameter& p : saved) {  // the same list, in the same order, on every replica
    saved_names.insert(p.name);
    const auto at = index.find(p.name);
    if (at == index.end() || !step.has_masters()) {  // whole on every replica after each step
      out.tensors.emplace_back(p.name, p.parameter->value.to(Device::cpu()).clone());
      continue;
    }
    const auto master = masters.find(p.name);
    out.tensors.emplace_back(p.name, shard.gather_whole(at->second, master == masters.end() ? nullptr : &master->second));
  }
  // The optimizer state stays sliced: each replica writes its own slices with their ranges.
  const std::set<std::string> suffixes = state_suffixes(shard, state);
  for (std::size_t i = 0; i < shard.parameters().size(); ++i) {
    const std::string& name = shard.parameters()[i].name;
    if (!saved_names.count(name) || shard.view_of(i) < 0) continue;  // a tied copy: its canonical's is stored
    const std::int64_t offset = shard.offsets().at(name), total = shard.parameters()[i].parameter->value.numel();
    for (const std::string& suffix : suffixes) {
      const Tensor& piece = state.at(name + suffix);
      out.slices.emplace_back(optimizer_tensor_name(name + suffix),
                              piece.reshape(Shape{piece.numel()}).to(Device::cpu()).clone());
      out.ranges[optimizer_tensor_name(name + suffix)] = {offset, total};
    }
  }
  out.optimizer = {step.optimizer().type(), step.optimizer().steps()};
  out.replica = shard.replica();
  out.replicas = shard.replicas();
  return out;
}

}  // namespace loom::runtime::detail
