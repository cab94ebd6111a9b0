// TraceRecorder: the executed actions of one rank as trace events (schedule/trace.h), written at
// the end as one Chrome trace on rank 0 with a track per rank, named by its stage and replica
// positions. The same format the simulator writes, so predicted and measured timelines open side
// by side. Memory stays bounded however long the run: each rank keeps at most kBufferedEvents in
// memory and spools the rest to a file of its own in the system's temporary directory; at the end
// the ranks send their events to rank 0 in rounds of kBufferedEvents, which rank 0 streams into
// the trace file.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <loom/comm/communicator.h>
#include <loom/comm/parallel_layout.h>
#include <loom/runtime/executor.h>
#include <loom/schedule/trace.h>

namespace loom::runtime {

class TraceRecorder {
 public:
  static constexpr std::size_t kBufferedEvents = 4096;

  // Times are kept in ms from now. `with_chunk`: event names carry the chunk (interleaved runs).
  TraceRecorder(int rank, bool with_chunk);
  ~TraceRecorder();
  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  void record(const ActionEvent& event);
  // Collective over `world`: rank 0 writes `path`.
  void write(comm::Communicator& world, const comm::ParallelLayout& layout, int stages, const std::string& path);

 private:
  void spill();  // the buffered events to the spool file

  int rank_;
  bool with_chunk_;
  double origin_us_;
  std::vector<schedule::TraceEvent> events_;  // at most kBufferedEvents
  std::string spool_path_;
  std::ofstream spool_;
};

}  // namespace loom::runtime
