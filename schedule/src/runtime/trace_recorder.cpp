// TraceRecorder (see trace_recorder.h).
#include <loom/runtime/trace_recorder.h>

#include <nlohmann/json.hpp>

#include <loom/comm/control.h>
#include <loom/core/timer.h>

namespace loom::runtime {

namespace {
nlohmann::json event_row(const schedule::TraceEvent& e) {
  return {e.name, e.category, e.start_ms, e.duration_ms, e.microbatch, e.chunk, e.version, e.stage};
}

schedule::TraceEvent event_from_row(const nlohmann::json& row, int track) {
  schedule::TraceEvent event;
  event.track = track;
  event.name = row[0];
  event.category = row[1];
  event.start_ms = row[2];
  event.duration_ms = row[3];
  event.microbatch = row[4];
  event.chunk = row[5];
  event.version = row[6];
  event.stage = row[7];
  return event;
}

std::string track_name(int rank, const comm::ParallelLayout& layout, int stages) {
  std::string name = "rank " + std::to_string(rank);
  for (const auto& p : layout.positions(rank))
    name += " (stage " + std::to_string(p.stage % stages) + ", replica " + std::to_string(p.replica) + ")";
  return name;
}
}  // namespace

TraceRecorder::TraceRecorder(int rank, bool with_chunk) : rank_(rank), with_chunk_(with_chunk), origin_us_(now_us()) {}

void TraceRecorder::record(const ActionEvent& e) {
  events_.push_back(schedule::trace_event(e.action, rank_, e.stage, (e.start_us - origin_us_) / 1000.0,
                                          (e.end_us - origin_us_) / 1000.0, with_chunk_));
}

void TraceRecorder::write(comm::Communicator& world, const comm::ParallelLayout& layout, int stages,
                          const std::string& path) const {
  nlohmann::json mine = nlohmann::json::array();
  for (const auto& e : events_) mine.push_back(event_row(e));
  const std::vector<std::string> texts = comm::gather_text(world, mine.dump());
  if (world.rank() != 0) return;
  schedule::Trace trace;
  for (int r = 0; r < static_cast<int>(texts.size()); ++r) {
    trace.track_names.push_back(track_name(r, layout, stages));
    for (const auto& row : nlohmann::json::parse(texts[static_cast<std::size_t>(r)]))
      trace.events.push_back(event_from_row(row, r));
  }
  schedule::write_chrome_trace(trace, path);
}

}  // namespace loom::runtime
