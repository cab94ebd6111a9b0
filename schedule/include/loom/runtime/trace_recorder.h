// TraceRecorder: the executed actions of one rank as trace events (schedule/trace.h), gathered to
// rank 0 at the end and written as one Chrome trace with a track per rank, named by its stage and
// replica positions. The same format the simulator writes, so predicted and measured timelines
// open side by side.
#pragma once

#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/parallel_layout.h>
#include <loom/runtime/executor.h>
#include <loom/schedule/trace.h>

namespace loom::runtime {

class TraceRecorder {
 public:
  // Times are kept in ms from now. `with_chunk`: event names carry the chunk (interleaved runs).
  TraceRecorder(int rank, bool with_chunk);

  void record(const ActionEvent& event);
  // Collective over `world`: rank 0 writes `path`.
  void write(comm::Communicator& world, const comm::ParallelLayout& layout, int stages, const std::string& path) const;

 private:
  int rank_;
  bool with_chunk_;
  double origin_us_;
  std::vector<schedule::TraceEvent> events_;
};

}  // namespace loom::runtime
