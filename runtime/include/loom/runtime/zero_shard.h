// ZeRO-1 over a stage's replicas (`--zero 1`): each replica keeps the optimizer state, and the fp32
// masters under bf16/fp16, of an even 1/R slice of its stage's parameters, flattened into one
// buffer in a fixed order (a slice may cut a tensor: sharding is by element, not by tensor).
//
// The slice is a list of views: for each parameter the slice meets, a Parameter whose value and
// gradient are views of the model's (same name), so the optimizer built over them updates the
// model's storage of this slice in place and never allocates state for the rest. After the step,
// gather() hands every replica's updated slice to the others (an all-gather over the replicas, in
// windows of at most `window` elements through host memory). The gradient buckets reduce-scatter
// over the same slices (comm::BucketSharding from sharding()), so each replica receives the sum of
// its slice only; the updates are those of the unsharded run (bit for bit at two replicas, where a
// sum of two terms does not depend on its order).
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/range_split.h>
#include <loom/layers/layer.h>

namespace loom::runtime {

class ZeroShard {
 public:
  // `parameters`: the stage's trainable parameters (every chunk, in a fixed order, the same on
  // every replica); `replicas`: the stage's replicas (host memory: an MPI communicator).
  ZeroShard(const std::vector<NamedParameter>& parameters, comm::Communicator& replicas,
            std::int64_t window = std::int64_t{1} << 22);
  ~ZeroShard();

  // This replica's slice as views (what the optimizer updates).
  const std::vector<NamedParameter>& slice() const { return slice_; }
  // Element offset of each view into its parameter (for reading its optimizer state by range).
  const std::map<std::string, std::int64_t>& offsets() const { return offsets_; }
  comm::Range range() const { return owners_.part(replicas_.rank()); }
  int replica() const { return replicas_.rank(); }
  int replicas() const { return replicas_.size(); }
  std::int64_t total() const { return owners_.total(); }

  // Collective over the replicas, after the optimizer step: every parameter whole on every replica.
  void gather();
  // gather() on a thread of its own, so that it overlaps what the rank does before its next forward
  // (a later stage waits there for its first input); wait_gather() returns when it is done and
  // rethrows its error (a no-op when none runs). Parameters on a device, or MPI without
  // MPI_THREAD_MULTIPLE: gather() here and now. Nothing may read the parameters in between.
  void start_gather();
  void wait_gather();
  // Collective: `parameter` whole, put together from every replica's slice-sized `piece` (its fp32
  // master, for checkpoints under bf16/fp16; null where this replica's slice does not meet it).
  Tensor gather_whole(std::size_t parameter, const Tensor* piece);
  const std::vector<NamedParameter>& parameters() const { return parameters_; }
  // The first element of `parameter` in the flat order, or -1 when it is not one of parameters().
  std::int64_t start_of(const Parameter* parameter) const;
  // Every replica's range of the flat order (the replicas communicator's order).
  const comm::RangeSplit& owners() const { return owners_; }
  const std::vector<int>& world_ranks() const { return replicas_.world_ranks(); }
  // The view of parameter `p` in slice(), or -1 when this replica's slice does not meet it.
  int view_of(std::size_t p) const { return view_of_.at(p); }

 private:
  std::vector<NamedParameter> parameters_;
  std::vector<std::int64_t> starts_;  // each parameter's first element in the flat order
  comm::Communicator& replicas_;
  comm::RangeSplit owners_;
  std::int64_t window_;
  std::vector<std::unique_ptr<Parameter>> views_;
  std::vector<NamedParameter> slice_;
  std::vector<int> view_of_;
  std::map<std::string, std::int64_t> offsets_;
  std::thread gatherer_;
  std::exception_ptr gather_error_;
};

}  // namespace loom::runtime
