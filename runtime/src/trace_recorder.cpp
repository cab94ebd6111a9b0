// TraceRecorder (see trace_recorder.h).
#include <loom/runtime/trace_recorder.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <loom/comm/control.h>
#include <loom/core/timer.h>

namespace loom::runtime {

namespace {
nlohmann::json event_row(const schedule::TraceEvent& e) {
  return {e.name, e.category, e.start_ms, e.duration_ms, e.microbatch, e.chunk, e.version, e.stage, e.overlapped};
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
  event.overlapped = row[8];
  return event;
}

std::string track_name(int rank, const comm::ParallelLayout& layout, int stages) {
  std::string name = "rank " + std::to_string(rank);
  for (const auto& p : layout.positions(rank)) {  // a rank's chunks of one stage (v > 1) share a label
    const std::string label = " (stage " + std::to_string(p.stage % stages) + ", replica " + std::to_string(p.replica) + ")";
    if (name.find(label) == std::string::npos) name += label;
  }
  return name;
}

// Up to `count` spooled rows as one JSON array text ("[]" when the spool is exhausted).
std::string next_rows(std::ifstream& in, std::size_t count) {
  nlohmann::json rows = nlohmann::json::array();
  std::string line;
  while (rows.size() < count && std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  return rows.dump();
}
}  // namespace

TraceRecorder::TraceRecorder(int rank, bool with_chunk)
    : rank_(rank), with_chunk_(with_chunk), origin_us_(now_us()),
      spool_path_((std::filesystem::temp_directory_path() /
                   ("loom-trace-" + std::to_string(::getpid()) + "-rank" + std::to_string(rank) + ".jsonl"))
                      .string()) {
  events_.reserve(kBufferedEvents);
}

TraceRecorder::~TraceRecorder() {
  spool_.close();
  std::error_code ignored;
  std::filesystem::remove(spool_path_, ignored);
}

void TraceRecorder::record(const ActionEvent& e) {
  if (events_.size() == kBufferedEvents) spill();
  events_.push_back(schedule::trace_event(e.action, rank_, e.stage, (e.start_us - origin_us_) / 1000.0,
                                          (e.end_us - origin_us_) / 1000.0, with_chunk_));
}

void TraceRecorder::spill() {
  if (!spool_.is_open()) {
    spool_.open(spool_path_, std::ios::trunc);
    LOOM_CHECK(static_cast<bool>(spool_), "trace: cannot write the spool file ", spool_path_, ": ", std::strerror(errno));
  }
  for (const auto& e : events_) spool_ << event_row(e).dump() << '\n';
  spool_.flush();
  LOOM_CHECK(static_cast<bool>(spool_), "trace: error while writing ", spool_path_, ": ", std::strerror(errno));
  events_.clear();
}

void TraceRecorder::write(comm::Communicator& world, const comm::ParallelLayout& layout, int stages,
                          const std::string& path) {
  spill();
  spool_.close();
  std::ifstream in(spool_path_);
  LOOM_CHECK(static_cast<bool>(in), "trace: cannot read back ", spool_path_);
  std::unique_ptr<schedule::ChromeTraceWriter> out;
  if (world.rank() == 0) {
    out = std::make_unique<schedule::ChromeTraceWriter>(path);
    for (int r = 0; r < world.size(); ++r)
      for (const nlohmann::json& m : schedule::chrome_track_metadata(r, track_name(r, layout, stages))) out->add(m);
  }
  // Rounds of at most kBufferedEvents per rank until every spool is read.
  for (bool more = true; more;) {
    const std::string rows = next_rows(in, kBufferedEvents);
    const std::vector<std::string> texts = comm::gather_text(world, rows);
    for (int r = 0; r < static_cast<int>(texts.size()); ++r)
      for (const auto& row : nlohmann::json::parse(texts[static_cast<std::size_t>(r)]))
        out->add(schedule::chrome_event(event_from_row(row, r)));
    more = comm::any_member(world, rows != "[]");
  }
  if (out) out->close();
}

}  // namespace loom::runtime
