// Gradient buckets: allreduce gradients in ~25 MB groups while backward is still running.
//
// Gradients are registered in forward (layer) order and grouped from the last one back, the order
// backward produces them: a bucket closes before it would exceed `bucket_bytes` (a larger gradient
// gets a bucket of its own) or when the dtype changes. During backward the executor calls
// mark_ready(i) as soon as gradient i is final for the step; when every gradient of a bucket is
// final the bucket is launched: copied into its flat buffer (MemoryCategory::communication),
// allreduced over the reduce group, and copied back. The optimizer step calls wait() first.
//
// Progress: with `background` (the default, needs MPI_THREAD_MULTIPLE) launched buckets run on a
// progress thread in launch order, while the executor thread goes on with backward (and its own
// stage-boundary traffic on other communicators). Launch order is the order of the mark_ready
// calls, which every replica makes in the same order (its program's), so every replica issues the
// same collectives in the same order and the result is deterministic. The thread is
// `options.progress` when given -- the executor gives all of a rank's bucketers one, so that a rank
// holding two chunks runs their allreduces one after another in launch order, not two at once --
// or else the bucketer's own. Without `background`, a bucket runs inside the mark_ready call that
// launches it (still before backward ends, but blocking it). Over an NCCL reduce group buckets
// always run inline: one thread (the executor's) issues all of a rank's NCCL work, in schedule
// order, because NCCL kernels launched on one GPU by two threads for different communicators have
// no progress guarantee (issue 33); the allreduce is then not overlapped with backward. The reduce
// group belongs to the progress thread while a step is in flight.
//
// Host-staged buckets: when the gradients live on a device (cuda, or the sim device) and the reduce
// group moves host memory (MPI), each bucket's flat buffer is host memory, so packing copies the
// gradients device -> host and unpacking copies the sum host -> device (staged() is true). All
// gradients must be on one device.
//
// Gradient tensors must stay the same storage across steps (zero them in place). A gradient not
// marked by wait() is treated as final then. Events (launched / started / finished, with how many
// gradients were marked at that moment) go to an optional observer, called from the thread where
// they happen with the bucketer's lock held (it must not call back into the bucketer), so tests can
// check that buckets launch, and even finish, before backward ends.
//
// Sharded buckets (ZeRO-1, runtime/zero_shard.h): given a BucketSharding, member r of the group
// keeps only owners.part(r) of a flat order of the gradients (its slice of the stage's parameters).
// A bucket whose gradients are consecutive in that order is packed in that order and
// reduce-scattered instead of allreduced (one ring over the members, whatever the algorithm: half
// the bytes of an allreduce), and only this member's part is copied back; the rest of those
// gradients keeps this rank's unreduced values. A bucket with a gradient outside the order (a
// tied copy on its canonical's stage) is allreduced as without sharding.
//
// Destroyed while an exception unwinds (this rank failed mid-step), the bucketer gives a bucket in
// flight 2 s to finish; if it is still waiting for peers (which may be stuck behind this rank's
// failure) it aborts the job with a message rather than hang until the watchdog fires.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <loom/comm/allreduce.h>
#include <loom/comm/range_split.h>
#include <loom/comm/progress_thread.h>
#include <loom/core/tensor.h>

namespace loom::comm {

struct BucketOptions {
  std::int64_t bucket_bytes = 25 << 20;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::hierarchical;
  ReduceOp op = ReduceOp::average;
  bool background = true;
  std::shared_ptr<ProgressThread> progress = nullptr;  // runs launched buckets; null: the bucketer starts its own
};

struct BucketEvent {
  enum class Kind : std::uint8_t { launched, started, finished };
  Kind kind = Kind::launched;
  int bucket = 0;
  std::int64_t step = 0;  // how many wait() calls came before
  int marked = 0;         // gradients marked ready in this step when the event happened
  double time_us = 0;     // loom::now_us()
};

struct BucketSharding {
  RangeSplit owners = RangeSplit::even(0, 1);  // per member of the group (in its order): its range of the flat order
  std::vector<std::int64_t> starts;           // per gradient: its first element in the flat order, -1: not in it
};

class GradientBucketer {
 public:
  GradientBucketer(ReduceGroup& group, std::vector<Tensor> gradients, BucketOptions options = {},
                   std::optional<BucketSharding> sharding = std::nullopt);
  ~GradientBucketer();
  GradientBucketer(const GradientBucketer&) = delete;
  GradientBucketer& operator=(const GradientBucketer&) = delete;

  int buckets() const { return static_cast<int>(buckets_.size()); }
  int gradients() const { return static_cast<int>(gradients_.size()); }
  // Gradient indices of a bucket, in the order they fill it (last layer first).
  const std::vector<int>& bucket_gradients(int bucket) const { return buckets_.at(bucket).members; }
  int bucket_of(int gradient) const { return bucket_of_.at(gradient); }
  std::int64_t bucket_bytes(int bucket) const;
  const BucketOptions& options() const { return options_; }
  bool background() const { return progress_ != nullptr; }
  // True when the gradients are on another device than the reduce group's memory (host-staged).
  bool staged() const { return staged_; }
  // True when `bucket` is reduce-scattered (sharded, see above).
  bool scattered(int bucket) const { return buckets_.at(bucket).scatter.has_value(); }

  void set_observer(std::function<void(const BucketEvent&)> observer);
  void mark_ready(int gradient);
  // Blocks until `bucket` of the current step is reduced and copied back.
  void wait_bucket(int bucket);
  // Blocks until every bucket is done; the next mark_ready starts the next step.
  void wait();

 private:
  struct Bucket {
    std::vector<int> members;
    std::vector<std::int64_t> offsets;  // element offset of each member in `flat`
    Tensor flat;
    DType dtype = DType::f32;
    std::int64_t bytes = 0;
    std::optional<RangeSplit> scatter;  // sharded: each member's part of `flat`
    int pending = 0;
    bool done = false;
  };

  void shard_buckets(const BucketSharding& sharding);
  void launch_locked(int bucket, std::unique_lock<std::mutex>& lock);
  // Runs `bucket` with `lock` released meanwhile: its events, done or error_ (also returned).
  std::exception_ptr run_locked(int bucket, std::unique_lock<std::mutex>& lock);
  void run_launched(int bucket);  // on the progress thread
  void run_bucket(int bucket);    // pack, allreduce, unpack; no lock held
  void reduce_scatter_bucket(Bucket& bucket);
  void emit(BucketEvent::Kind kind, int bucket);  // caller holds mutex_
  void rethrow_locked();

  ReduceGroup& group_;
  std::vector<Tensor> gradients_;
  BucketOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_;
  std::vector<char> marked_;
  bool staged_ = false;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void(const BucketEvent&)> observer_;
  std::int64_t step_ = 0;
  int marked_count_ = 0;
  int finished_ = 0;  // buckets done in this step
  int queued_ = 0;    // buckets handed to the progress thread and not yet run or skipped
  int running_ = -1;  // the bucket being reduced, -1: none
  bool stopping_ = false;
  std::exception_ptr error_;
  std::shared_ptr<ProgressThread> progress_;
};

}  // namespace loom::comm
