// Tied parameters (models/model.h ParameterTie) on the ranks of a pipelined run.
//
// Where both parameters of a tie sit on this rank (one stage), they are one tensor: the copy's
// value is the canonical's storage, the optimizer, the gradient-norm and the checkpoint see the
// canonical only, and before each step the copy's gradient (already summed over the stage's
// replicas) is added into the canonical's. Where they sit on different stages, each holding
// rank keeps a copy, initialised from the canonical's holder (a broadcast over the tie group: every
// rank holding either, replicas included), stepped by its own optimizer; before each step the tie
// group sums the gradient: replica 0 of each stage contributes its (replica-summed) gradient, the
// other replicas zero, so each stage's share is counted exactly once whatever the replica counts.
// Both sums are of two terms, so every copy gets the same bits and the copies stay identical. The
// copy is left out of the norm and the checkpoint (which stores the canonical name; a resume
// reads the copy from it: renames()).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/layers/layer.h>
#include <loom/models/model.h>
#include <loom/runtime/zero_shard.h>

namespace loom::runtime {

class TiedParameters {
 public:
  // Collective over `world` (splits a communicator per tie held across stages). `parameters`:
  // every parameter of this rank's model chunks (after their move to the device). `first_replica`:
  // this rank is replica 0 of its stage.
  TiedParameters(const std::vector<ParameterTie>& ties, const std::vector<NamedParameter>& parameters,
                 comm::Communicator& world, bool first_replica);
  ~TiedParameters();

  // Collective over the tie groups: every copy takes its canonical's value (a fresh run; a resume
  // loads the copies afterwards).
  void initialize();
  // Before the optimizer step (after the replica allreduce): the summed gradients, as above (a
  // local copy's gradient is moved: zero after).
  void sum_gradients();
  // --zero 1: the buckets leave each replica the sum of its slice only, so each replica contributes
  // the part of a held gradient inside its slice (zero elsewhere) instead of replica 0 all of it:
  // again every element's stage share counts once, and adding zeros keeps the sum exact.
  void shard(const ZeroShard& shard);

  // Names this rank's optimizer must not update (copies sharing the canonical's tensor).
  const std::set<std::string>& shared() const { return shared_; }
  // Names that are not their own parameter: left out of the gradient norm and the checkpoint.
  const std::set<std::string>& copies() const { return copies_; }
  // Copy name -> canonical name, for loading a copy held here from a checkpoint.
  const std::map<std::string, std::string>& renames() const { return renames_; }

 private:
  struct Local;   // both on this rank
  struct Across;  // one of the two here, the other on another stage
  std::vector<Local> local_;
  std::vector<Across> across_;
  std::set<std::string> shared_, copies_;
  std::map<std::string, std::string> renames_;
  bool first_replica_ = false;
};

}  // namespace loom::runtime
