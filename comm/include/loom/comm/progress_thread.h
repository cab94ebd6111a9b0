// A progress thread: runs submitted jobs one at a time, in the order they were submitted.
//
// One rank's gradient bucketers share one (runtime/executor.cpp), so the rank's allreduces run one
// after another in launch order -- the executor's program order, the same on every replica --
// instead of one thread per bucketer running collectives at once: those contend for the cores and
// for Open MPI's progress engine, and made a two-chunk data-parallel step's allreduce wait 8-10 ms
// where a lone one takes 1.4 ms (docs/REPRODUCING.md, issue 29's calibration).
//
// Jobs must not throw (the bucketer catches and keeps its own error). The destructor runs what is
// still queued, then joins: a job's owner must outlive its queued jobs (the bucketer waits for its
// own before it goes).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace loom::comm {

class ProgressThread {
 public:
  ProgressThread();
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  void submit(std::function<void()> job);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace loom::comm
