// WeightStash: PipeDream's weight versions for one rank's parameters.
//
// Under an asynchronous schedule every compute action carries the weight version it must use (the
// number of optimizer steps its stage had taken before the micro-batch's forward). The newest
// version lives in the parameters; before a STEP overwrites it, the stash copies it if a later
// action of the program still uses it (MemoryCategory::parameters), and drops each copy after its
// last use. enter(v) swaps version v in for one compute action, leave() swaps the newest back.
#pragma once

#include <cstddef>
#include <map>
#include <vector>

#include <loom/layers/layer.h>
#include <loom/schedule/action.h>

namespace loom::runtime {

// For one experiment only (`loom train --no-weight-stashing-experiment`,
// scripts/reproduce/weight_stashing.sh): with it set, WeightStashes built afterwards keep no
// versions, so every backward runs with the newest weights instead of its forward's — the
// inconsistent gradients PipeDream's weight stashing exists to avoid. Process-wide, off by default.
void set_weight_stashing_off_for_experiment(bool off);

class WeightStash {
 public:
  // `program`: this rank's actions, to know where each version is used last.
  WeightStash(std::vector<Parameter*> parameters, const std::vector<schedule::Action>& program);

  void begin_run() { newest_ = 0; }
  // Around compute action `index` that uses `version` (< 0: the current weights).
  void enter(int version);
  void leave(int version, std::size_t index);
  // Before the STEP at action `index`: keep the newest weights if a later action needs them.
  void before_step(std::size_t index);
  void after_step() { ++newest_; }
  // Every stashed copy must be gone by the end of a run.
  void check_empty() const;

 private:
  std::vector<Parameter*> parameters_;
  bool off_ = false;                           // set_weight_stashing_off_for_experiment
  int newest_ = 0;                             // versions count from the start of the run
  std::map<int, std::size_t> last_use_;        // version -> index of its last compute action
  std::map<int, std::vector<Tensor>> stashed_;  // version -> parameter values
  std::vector<Tensor> newest_values_;          // held while an older version is swapped in
};

}  // namespace loom::runtime
