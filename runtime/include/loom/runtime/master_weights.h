// MasterWeights: the fp32 master copy of a rank's trainable parameters under bf16 or fp16 training
// (precision.h). Each model parameter gets a twin Parameter of the same name whose value is an f32
// copy (MemoryCategory::parameters) and whose gradient is the model parameter's own gradient
// tensor (shared storage: backward accumulates into it, the optimizer reads it). The optimizer and
// the checkpoints see the twins; the layers see the model parameters, which publish() sets to the
// masters rounded to the precision's 16-bit values.
#pragma once

#include <loom/layers/layer.h>

#include <memory>
#include <vector>

namespace loom::runtime {

class MasterWeights {
 public:
  // `parameters`: the model's trainable parameters, already on their device; `values`: bf16 or f16.
  MasterWeights(const std::vector<NamedParameter>& parameters, DType values);

  // The twins, named as the model's parameters: what the optimizer updates and
  // checkpoints hold.
  std::vector<NamedParameter> parameters();
  // Model parameter value = values(master value), in place, for every parameter.
  void publish();
  // Master value = model parameter value (a resume that loaded fp32 values into the model: ZeRO-1,
  // whose masters are slices the checkpoint holds whole).
  void pull();

 private:
  std::vector<Parameter*> model_;
  std::vector<std::unique_ptr<Parameter>> masters_;
  std::vector<std::string> names_;
  DType values_;
};

// `checkpointed` (every parameter and buffer of the model) with each trainable
// parameter replaced by its master twin of the same name; buffers stay the
// model's own.
std::vector<NamedParameter> with_masters(const std::vector<NamedParameter>& checkpointed,
                                         const std::vector<NamedParameter>& masters);

}  // namespace loom::runtime
