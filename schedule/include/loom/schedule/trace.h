// Timelines as Chrome trace JSON (open in https://ui.perfetto.dev or chrome://tracing) and as SVG.
// One format for simulated and measured runs: the simulator fills a Trace from its prediction,
// the executor from its clocks (one track per rank, times in ms from the start of the run).
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <loom/schedule/action.h>
#include <loom/schedule/simulator.h>

namespace loom::schedule {

struct TraceEvent {
  int track = 0;            // the rank
  std::string name;         // "F3", "B3c1", "wait RG3", ...
  std::string category;     // "forward", "backward", "backward_input", "backward_weight", "allreduce",
                            // "step", "send", "recv"
  double start_ms = 0;
  double duration_ms = 0;   // 0 for instant events (sends)
  int microbatch = -1, chunk = -1, version = -1, stage = -1;
  int virtual_stage = -1;   // the chunk's virtual stage, when known (simulation_trace fills it)
  bool overlapped = false;  // a half of an overlapped pair (DualPipeV, overlap.h)
};

struct Trace {
  std::vector<std::string> track_names;  // track_names[track]: "rank 3 (stage 1, replica 1)"
  std::vector<TraceEvent> events;
};

// The event for `action` run on `track` from start_ms to end_ms: what the executor records.
TraceEvent trace_event(const Action& action, int track, int stage, double start_ms, double end_ms,
                       bool with_chunk);

// One track per stage, compute/AR/STEP as slices, receive waits as "wait ..." slices, sends as
// instants.
Trace simulation_trace(const Schedule& schedule, const SimulationResult& result);

// {"traceEvents": [...], "displayTimeUnit": "ms"}; times in µs as the format wants.
nlohmann::json chrome_trace(const Trace& trace);
void write_chrome_trace(const Trace& trace, const std::string& path);
// The pieces of chrome_trace: a track's two metadata events, and one event.
std::vector<nlohmann::json> chrome_track_metadata(int track, const std::string& name);
nlohmann::json chrome_event(const TraceEvent& event);

// Writes a Chrome trace one event at a time (a run's trace need not fit in memory); the file is
// complete once close() has returned. Errors name the file and the reason.
class ChromeTraceWriter {
 public:
  explicit ChromeTraceWriter(const std::string& path);
  void add(const nlohmann::json& event);
  void close();

 private:
  std::string path_;
  std::ofstream out_;
  bool first_ = true;
};

// A picture of the timeline: one row per track, a box per slice labelled with its micro-batch.
std::string svg_timeline(const Trace& trace, const std::string& title = "");
void write_svg_timeline(const Trace& trace, const std::string& path, const std::string& title = "");

}  // namespace loom::schedule
