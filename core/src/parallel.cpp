// loom's CPU thread pool (see parallel.h). Built with oneDNN (LOOM_PARALLEL_OPENMP), the jobs run
// on the OpenMP team that oneDNN's primitives run on, so one set of threads serves both. Otherwise
// loom's own workers sleep on a condition variable between jobs. Either way chunks are taken from an
// atomic counter, the caller works too, and the call returns after the last chunk.
#include <loom/core/parallel.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#ifdef LOOM_PARALLEL_OPENMP
#include <exception>

#include <omp.h>
#endif

#include <loom/core/threads.h>

namespace loom {

namespace {

thread_local bool t_inside = false;

class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Runs the job if the pool is free; returns false (nothing done) when another thread holds it.
  bool run(std::int64_t n, std::int64_t chunk, int threads, const std::function<void(std::int64_t, std::int64_t)>& body) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    ensure_workers(threads - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      n_ = n;
      chunk_ = chunk;
      chunks_ = (n + chunk - 1) / chunk;
      next_.store(0);
      done_.store(0);
      active_workers_ = threads - 1;
      ++generation_;
    }
    wake_.notify_all();
    work();
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_.load() == chunks_ && running_ == 0; });
    body_ = nullptr;
    return true;
  }

 private:
  void work() {
    t_inside = true;
    std::int64_t c;
    while ((c = next_.fetch_add(1)) < chunks_) {
      (*body_)(c * chunk_, std::min(n_, (c + 1) * chunk_));
      if (done_.fetch_add(1) + 1 == chunks_) {
        std::lock_guard<std::mutex> lock(mutex_);
        finished_.notify_all();
      }
    }
    t_inside = false;
  }

  void ensure_workers(int count) {
    while (static_cast<int>(workers_.size()) < count) {
      const int id = static_cast<int>(workers_.size());
      workers_.emplace_back([this, id] { worker_loop(id); });
    }
  }

  void worker_loop(int id) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        // body_ is null once the caller has seen the job finish: a worker that wakes that late
        // must not join it (it would read the next job's fields while the caller writes them).
        if (id >= active_workers_ || body_ == nullptr) continue;
        ++running_;
      }
      work();
      std::lock_guard<std::mutex> lock(mutex_);
      if (--running_ == 0) finished_.notify_all();
    }
  }

  std::mutex busy_, mutex_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(std::int64_t, std::int64_t)>* body_ = nullptr;
  std::int64_t n_ = 0, chunk_ = 1, chunks_ = 0;
  std::atomic<std::int64_t> next_{0}, done_{0};
  int active_workers_ = 0, running_ = 0;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

#ifdef LOOM_PARALLEL_OPENMP
// The job on an OpenMP team of `threads` (libgomp keeps the team between regions: its workers spin
// briefly, then sleep). One job at a time, as the pool's; an exception leaves the region on its
// thread and is rethrown here.
class OpenMpTeam {
 public:
  bool run(std::int64_t n, std::int64_t chunk, int threads, const std::function<void(std::int64_t, std::int64_t)>& body) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    const std::int64_t chunks = (n + chunk - 1) / chunk;
    std::atomic<std::int64_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
#pragma omp parallel num_threads(threads)
    {
      t_inside = true;
      try {
        for (std::int64_t c; (c = next.fetch_add(1)) < chunks;) body(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next.store(chunks);
      }
      t_inside = false;
    }
    if (failure) std::rethrow_exception(failure);
    return true;
  }

 private:
  std::mutex busy_;
};

OpenMpTeam& pool() {
  static OpenMpTeam instance;
  return instance;
}
#else
Pool& pool() {
  static Pool instance;
  return instance;
}
#endif

}  // namespace

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& body) {
  if (n <= 0) return;
  const int threads = num_threads();
  grain = std::max<std::int64_t>(grain, 1);
  if (threads <= 1 || n < 2 * grain || t_inside) {
    body(0, n);
    return;
  }
  const std::int64_t chunk = std::max(grain, (n + 4 * threads - 1) / (4 * threads));
  if (!pool().run(n, chunk, threads, body)) body(0, n);
}

}  // namespace loom
