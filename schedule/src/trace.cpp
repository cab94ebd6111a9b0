// Chrome trace JSON for simulated and measured timelines. Perfetto and chrome://tracing read the
// "X" (complete) events per pid/tid; loom uses pid 0 and one tid per track (rank), named by
// metadata events so the tracks read "rank 3 (stage 1, replica 1)".
#include <loom/schedule/trace.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <loom/base/error.h>

namespace loom::schedule {

namespace {

const char* category_of(Op op) {
  switch (op) {
    case Op::Forward: return "forward";
    case Op::Backward: return "backward";
    case Op::BackwardInput: return "backward_input";
    case Op::BackwardWeight: return "backward_weight";
    case Op::SendActivation:
    case Op::SendGradient: return "send";
    case Op::RecvActivation:
    case Op::RecvGradient: return "recv";
    case Op::AllReduce: return "allreduce";
    case Op::Step: return "step";
  }
  return "other";
}

}  // namespace

TraceEvent trace_event(const Action& action, int track, int stage, double start_ms, double end_ms, bool with_chunk) {
  TraceEvent event;
  event.track = track;
  event.name = to_string(action, with_chunk);
  if (is_receive(action.op)) event.name = "wait " + event.name;
  event.category = category_of(action.op);
  event.start_ms = start_ms;
  event.duration_ms = end_ms - start_ms;
  event.microbatch = action.microbatch;
  event.chunk = action.microbatch >= 0 ? action.chunk : -1;
  event.version = action.version;
  event.stage = stage;
  event.overlapped = action.overlap != Overlap::none;
  return event;
}

Trace simulation_trace(const Schedule& schedule, const SimulationResult& result) {
  Trace trace;
  for (int s = 0; s < schedule.stages; ++s) trace.track_names.push_back("stage " + std::to_string(s));
  for (const TimedAction& timed : result.timeline) {
    // A receive that did not wait is not worth a slice; the send instant marks the transfer.
    if (is_receive(timed.action.op) && timed.end_ms <= timed.start_ms) continue;
    TraceEvent event =
        trace_event(timed.action, timed.stage, timed.stage, timed.start_ms, timed.end_ms, schedule.chunks > 1);
    // With several chunks a chunk number alone does not say where in the model it is (chunk 1 of
    // stage 0 is virtual stage S looped, 2S − 1 in a V).
    if (schedule.chunks > 1 && event.chunk >= 0) event.virtual_stage = schedule.virtual_stage(timed.stage, event.chunk);
    trace.events.push_back(std::move(event));
  }
  return trace;
}

std::vector<nlohmann::json> chrome_track_metadata(int track, const std::string& name) {
  return {{{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", track}, {"args", {{"name", name}}}},
          {{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", track}, {"args", {{"sort_index", track}}}}};
}

nlohmann::json chrome_event(const TraceEvent& e) {
  nlohmann::json args = nlohmann::json::object();
  if (e.stage >= 0) args["stage"] = e.stage;
  if (e.microbatch >= 0) args["microbatch"] = e.microbatch;
  if (e.chunk >= 0) args["chunk"] = e.chunk;
  if (e.virtual_stage >= 0) args["virtual_stage"] = e.virtual_stage;
  if (e.version >= 0) args["version"] = e.version;
  if (e.overlapped) args["overlapped"] = true;
  nlohmann::json event = {{"name", e.name}, {"cat", e.category}, {"pid", 0}, {"tid", e.track},
                          {"ts", e.start_ms * 1e3}, {"args", args}};
  if (e.duration_ms > 0) {
    event["ph"] = "X";
    event["dur"] = e.duration_ms * 1e3;
  } else {
    event["ph"] = "i";
    event["s"] = "t";
  }
  return event;
}

nlohmann::json chrome_trace(const Trace& trace) {
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t track = 0; track < trace.track_names.size(); ++track)
    for (nlohmann::json& m : chrome_track_metadata(static_cast<int>(track), trace.track_names[track]))
      events.push_back(std::move(m));
  for (const TraceEvent& e : trace.events) events.push_back(chrome_event(e));
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  std::ofstream out(path);
  LOOM_CHECK(static_cast<bool>(out), "cannot write trace file '", path, "'");
  out << chrome_trace(trace).dump(1) << '\n';
  LOOM_CHECK(static_cast<bool>(out), "error while writing trace file '", path, "'");
}

ChromeTraceWriter::ChromeTraceWriter(const std::string& path) : path_(path), out_(path) {
  LOOM_CHECK(static_cast<bool>(out_), "cannot write trace file '", path, "': ", std::strerror(errno));
  out_ << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
}

void ChromeTraceWriter::add(const nlohmann::json& event) {
  out_ << (first_ ? "" : ",\n") << event.dump();
  first_ = false;
}

void ChromeTraceWriter::close() {
  out_ << "\n]}\n";
  out_.close();
  LOOM_CHECK(!out_.fail(), "error while writing trace file '", path_, "': ", std::strerror(errno));
}

}  // namespace loom::schedule
