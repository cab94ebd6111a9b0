#include <loom/comm/gradient_bucketer.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <mpi.h>

#include <loom/comm/mpi_session.h>
#include <loom/comm/detail/test_hooks.h>
#include <loom/comm/watchdog.h>
#include <loom/core/log.h>
#include <loom/core/memory.h>
#include <loom/core/timer.h>

namespace loom::comm {

GradientBucketer::GradientBucketer(ReduceGroup& group, std::vector<Tensor> gradients, BucketOptions options,
                                   std::optional<BucketSharding> sharding)
    : group_(group), gradients_(std::move(gradients)), options_(options) {
  LOOM_CHECK(options_.bucket_bytes > 0, "gradient buckets need a positive size, got ", options_.bucket_bytes, " bytes");
  const Device device = group_.members().device();  // where the buckets live
  const Device gradient_device = gradients_.empty() || !gradients_[0].defined() ? device : gradients_[0].device();
  staged_ = gradient_device != device;
  LOOM_CHECK(!staged_ || device.is_cpu(), "gradients on ", gradient_device.str(), " cannot be reduced by a ",
             backend_name(group_.members().backend()), " group on ", device.str(), " (host staging needs a host group)");
  const int count = static_cast<int>(gradients_.size());
  bucket_of_.assign(count, -1);
  marked_.assign(count, 0);
  for (int i = count - 1; i >= 0; --i) {
    const Tensor& gradient = gradients_[i];
    LOOM_CHECK(gradient.defined(), "gradient ", i, " given to the bucketer is undefined");
    LOOM_CHECK(gradient.device() == gradient_device, "gradient ", i, " is on ", gradient.device().str(),
               " but the others are on ", gradient_device.str());
    LOOM_CHECK(gradient.dtype() == DType::f32 || gradient.dtype() == DType::f64, "gradient ", i, " has dtype ",
               dtype_name(gradient.dtype()), "; buckets reduce f32 or f64");
    const std::int64_t bytes = static_cast<std::int64_t>(gradient.nbytes());
    const bool fits = !buckets_.empty() && buckets_.back().dtype == gradient.dtype() &&
                      (buckets_.back().bytes + bytes <= options_.bucket_bytes || buckets_.back().bytes == 0);
    if (!fits) {
      buckets_.emplace_back();
      buckets_.back().dtype = gradient.dtype();
    }
    Bucket& bucket = buckets_.back();
    bucket.members.push_back(i);
    bucket.offsets.push_back(bucket.bytes / static_cast<std::int64_t>(dtype_size(bucket.dtype)));
    bucket.bytes += bytes;
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
  if (sharding) shard_buckets(*sharding);
  MemoryCategoryScope category(MemoryCategory::communication);
  const PinnedHostScope staging(gradient_device);  // host buckets of GPU gradients: page-locked
  for (Bucket& bucket : buckets_) {
    bucket.flat = Tensor::empty(Shape{bucket.bytes / static_cast<std::int64_t>(dtype_size(bucket.dtype))}, bucket.dtype, device);
    bucket.pending = static_cast<int>(bucket.members.size());
  }
  // NCCL work comes from one thread per process, the executor's, in schedule order (the same on
  // every replica): NCCL kernels that two threads launch on one GPU for different communicators
  // (this group's allreduce, a boundary's send) have no progress guarantee, and may each wait for
  // a peer that launched them in the other order. Buckets over NCCL therefore run inline.
  if (options_.background && group_.members().backend() == Backend::nccl)
    spdlog::debug("gradient buckets over NCCL run inside mark_ready: one thread issues this rank's NCCL work");
  else if (options_.background) {
    if (mpi_thread_multiple())
      progress_ = options_.progress ? options_.progress : std::make_shared<ProgressThread>();
    else
      spdlog::warn("MPI without MPI_THREAD_MULTIPLE: gradient buckets run inside mark_ready instead of a progress thread");
  }
}

// Buckets still queued are skipped; the progress thread must be done with this bucketer before it
// goes (a shared thread outlives it).
GradientBucketer::~GradientBucketer() {
  if (!progress_) return;
  std::unique_lock lock(mutex_);
  stopping_ = true;
  if (std::uncaught_exceptions() > 0 &&
      !changed_.wait_for(lock, std::chrono::seconds(2), [&] { return queued_ == 0; })) {
    std::fprintf(stderr,
                 "loom: error (rank %d): an exception is unwinding while gradient bucket %d is still being "
                 "allreduced; aborting the job\n",
                 error_rank(), running_);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  changed_.wait(lock, [&] { return queued_ == 0; });
}

// Each bucket whose gradients are consecutive in the sharding's flat order: packed in that order,
// with every member's part of it (see the header).
void GradientBucketer::shard_buckets(const BucketSharding& sharding) {
  LOOM_CHECK(sharding.starts.size() == gradients_.size(), "sharded buckets: ", sharding.starts.size(),
             " flat starts for ", gradients_.size(), " gradients");
  LOOM_CHECK(sharding.owners.parts() == group_.size(), "sharded buckets: ", sharding.owners.parts(), " owners for a group of ",
             group_.size());
  for (Bucket& bucket : buckets_) {
    std::vector<std::int64_t> starts;
    for (int g : bucket.members) starts.push_back(sharding.starts[g]);
    const std::int64_t first = *std::min_element(starts.begin(), starts.end());
    if (first < 0) continue;
    std::vector<std::int64_t> ends;  // consecutive: the sorted starts and ends meet
    for (std::size_t m = 0; m < starts.size(); ++m) ends.push_back(starts[m] + gradients_[bucket.members[m]].numel());
    std::vector<std::int64_t> sorted_starts = starts, sorted_ends = ends;
    std::sort(sorted_starts.begin(), sorted_starts.end());
    std::sort(sorted_ends.begin(), sorted_ends.end());
    if (!std::equal(sorted_starts.begin() + 1, sorted_starts.end(), sorted_ends.begin())) continue;
    const Range span{first, sorted_ends.back()};
    std::vector<std::int64_t> offsets;  // the owners' starts, clamped to the bucket
    for (int r = 0; r < group_.size(); ++r)
      offsets.push_back(std::clamp(sharding.owners.part(r).begin, span.begin, span.end) - span.begin);
    offsets.push_back(span.size());
    for (std::size_t m = 0; m < starts.size(); ++m) bucket.offsets[m] = starts[m] - first;
    bucket.scatter = RangeSplit(std::move(offsets));
  }
}

std::int64_t GradientBucketer::bucket_bytes(int bucket) const { return buckets_.at(bucket).bytes; }

void GradientBucketer::set_observer(std::function<void(const BucketEvent&)> observer) {
  std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

void GradientBucketer::emit(BucketEvent::Kind kind, int bucket) {
  if (observer_) observer_(BucketEvent{kind, bucket, step_, marked_count_, now_us()});
}

void GradientBucketer::rethrow_locked() {
  if (error_) std::rethrow_exception(error_);
}

void GradientBucketer::mark_ready(int gradient) {
  std::unique_lock lock(mutex_);
  rethrow_locked();
  LOOM_CHECK(gradient >= 0 && gradient < gradients(), "mark_ready(", gradient, "): the bucketer holds ", gradients(),
             " gradients");
  LOOM_CHECK(!marked_[gradient], "gradient ", gradient, " marked ready twice in step ", step_);
  marked_[gradient] = 1;
  ++marked_count_;
  const int bucket = bucket_of_[gradient];
  if (--buckets_[bucket].pending == 0) launch_locked(bucket, lock);
}

void GradientBucketer::launch_locked(int bucket, std::unique_lock<std::mutex>& lock) {
  emit(BucketEvent::Kind::launched, bucket);
  if (progress_) {
    ++queued_;
    progress_->submit([this, bucket] { run_launched(bucket); });
    return;
  }
  if (const std::exception_ptr error = run_locked(bucket, lock)) std::rethrow_exception(error);
}

std::exception_ptr GradientBucketer::run_locked(int bucket, std::unique_lock<std::mutex>& lock) {
  emit(BucketEvent::Kind::started, bucket);
  running_ = bucket;
  lock.unlock();
  std::exception_ptr error;
  try {
    run_bucket(bucket);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  running_ = -1;
  if (error) {
    error_ = error;
    return error;
  }
  buckets_[bucket].done = true;
  ++finished_;
  emit(BucketEvent::Kind::finished, bucket);
  return nullptr;
}

void GradientBucketer::run_bucket(int index) {
  Bucket& bucket = buckets_[index];
  for (std::size_t m = 0; m < bucket.members.size(); ++m) {
    const Tensor& gradient = gradients_[bucket.members[m]];
    if (gradient.numel() == 0) continue;
    bucket.flat.slice(bucket.offsets[m], bucket.offsets[m] + gradient.numel()).reshape(gradient.shape()).copy_from(gradient);
  }
  test_pause_at(PausePhase::allreduce);
  if (bucket.scatter) return reduce_scatter_bucket(bucket);
  allreduce(group_, bucket.flat, options_.op, options_.algorithm);
  // Staged from pinned host buckets, these copies are queued without waiting (ops::copy). The next
  // step's packing copies above are queued behind them on the same stream and waited for before
  // the allreduce writes the bucket again, so the host never overwrites a bucket still being read.
  for (std::size_t m = 0; m < bucket.members.size(); ++m) {
    Tensor gradient = gradients_[bucket.members[m]];
    if (gradient.numel() == 0) continue;
    gradient.copy_from(bucket.flat.slice(bucket.offsets[m], bucket.offsets[m] + gradient.numel()).reshape(gradient.shape()));
  }
}

// A sharded bucket: reduce-scattered, and only this member's part copied back.
void GradientBucketer::reduce_scatter_bucket(Bucket& bucket) {
  const double scale = options_.op == ReduceOp::average ? 1.0 / group_.size() : 1.0;
  if (bucket.flat.numel() > 0) group_.members().reduce_scatter(bucket.flat.raw_data(), *bucket.scatter, bucket.dtype, scale);
  const Range mine = bucket.scatter->part(group_.rank());
  for (std::size_t m = 0; m < bucket.members.size(); ++m) {
    Tensor gradient = gradients_[bucket.members[m]];
    const Range held = intersect(mine, {bucket.offsets[m], bucket.offsets[m] + gradient.numel()});
    if (held.empty()) continue;
    Tensor target = gradient.reshape(Shape{gradient.numel()}).slice(held.begin - bucket.offsets[m], held.end - bucket.offsets[m]);
    target.copy_from(bucket.flat.slice(held.begin, held.end));
  }
}

void GradientBucketer::run_launched(int bucket) {
  std::unique_lock lock(mutex_);
  if (!stopping_ && !error_) (void)run_locked(bucket, lock);
  --queued_;
  changed_.notify_all();
}

void GradientBucketer::wait_bucket(int bucket) {
  std::unique_lock lock(mutex_);
  LOOM_CHECK(bucket >= 0 && bucket < buckets(), "wait_bucket(", bucket, "): the bucketer has ", buckets(), " buckets");
  rethrow_locked();
  if (!progress_) {
    LOOM_CHECK(buckets_[bucket].done, "wait_bucket(", bucket, "): the bucket has not run yet (not all its gradients are marked ready)");
    return;
  }
  WatchdogScope watch("wait for a gradient bucket");
  changed_.wait(lock, [&] { return buckets_[bucket].done || error_; });
  rethrow_locked();
}

void GradientBucketer::wait() {
  std::unique_lock lock(mutex_);
  rethrow_locked();
  for (int gradient = gradients() - 1; gradient >= 0; --gradient) {
    if (marked_[gradient]) continue;
    marked_[gradient] = 1;
    ++marked_count_;
    const int bucket = bucket_of_[gradient];
    if (--buckets_[bucket].pending == 0) launch_locked(bucket, lock);
  }
  if (progress_) {
    WatchdogScope watch("wait for gradient buckets");
    changed_.wait(lock, [&] { return finished_ == buckets() || error_; });
    rethrow_locked();
  }
  LOOM_CHECK(finished_ == buckets(), "gradient buckets did not all run");
  for (Bucket& bucket : buckets_) {
    bucket.pending = static_cast<int>(bucket.members.size());
    bucket.done = false;
  }
  std::fill(marked_.begin(), marked_.end(), 0);
  marked_count_ = 0;
  finished_ = 0;
  ++step_;
}

}  // namespace loom::comm
