// Chrome trace JSON and SVG from a simulated timeline.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <loom/schedule/generators.h>
#include <loom/schedule/trace.h>

using namespace loom::schedule;

namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("chrome trace: one named track per stage, a slice per compute, times in microseconds") {
  const Schedule schedule = dapple(2, 2);
  const SimulationResult result = simulate(schedule, uniform_costs(1.5, 2));
  const nlohmann::json trace = chrome_trace(simulation_trace(schedule, result));
  int slices = 0, names = 0, waits = 0;
  for (const auto& event : trace.at("traceEvents")) {
    if (event.at("ph") == "M" && event.at("name") == "thread_name") {
      ++names;
      CHECK(event.at("args").at("name") == "stage " + std::to_string(event.at("tid").get<int>()));
    }
    if (event.at("ph") == "X" && event.at("cat") == "forward") {
      ++slices;
      CHECK(event.at("dur").get<double>() == Approx(1500));
    }
    if (event.at("name") == "B1" && event.at("tid") == 0) {
      // Stage 1 runs F0 [1.5,3] B0 [3,5] F1 [5,6.5] B1 [6.5,8.5]; stage 0's B1 waits for it.
      CHECK(event.at("ts").get<double>() == Approx(8500));
      CHECK(event.at("args").at("microbatch") == 1);
      ++waits;
    }
  }
  CHECK(waits == 1);
  CHECK(names == 2);
  CHECK(slices == 4);
}

TEST_CASE("trace events for measured runs carry the action's identity") {
  const TraceEvent event = trace_event(Action{Op::Backward, 3, 1, 2}, 5, 1, 10.0, 12.5, true);
  CHECK(event.name == "B3c1@2");
  CHECK(event.category == "backward");
  CHECK(event.track == 5);
  CHECK(event.duration_ms == Approx(2.5));
  CHECK(event.version == 2);
  const TraceEvent wait = trace_event(Action{Op::RecvGradient, 3, 0, -1}, 0, 0, 1, 2, false);
  CHECK(wait.name == "wait RG3");
  CHECK(wait.category == "recv");
}

TEST_CASE("trace file round trip") {
  const Schedule schedule = zb_h1(2, 2);
  const Trace trace = simulation_trace(schedule, simulate(schedule, uniform_costs(1, 2)));
  const std::string path = std::string(LOOM_BINARY_DIR) + "/schedule_trace_test.json";
  write_chrome_trace(trace, path);
  std::ifstream in(path);
  const nlohmann::json parsed = nlohmann::json::parse(in);
  CHECK(parsed == chrome_trace(trace));
  std::remove(path.c_str());
  CHECK_THROWS_WITH(write_chrome_trace(trace, "/nonexistent-dir/x.json"),
                    Catch::Contains("cannot write trace file '/nonexistent-dir/x.json'"));
}

TEST_CASE("svg: a labelled box per compute, AR and STEP with a duration") {
  const Schedule schedule = dapple(4, 8);
  CostModel costs = uniform_costs(1, 2);
  costs.stages[0].allreduce_ms = 0.5;
  const std::string svg = svg_timeline(simulation_trace(schedule, simulate(schedule, costs)), "dapple S=4 M=8");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(count(svg, "<title>F") == 32);
  CHECK(count(svg, "<title>B") == 32);
  CHECK(count(svg, "<title>AR") == 4);
  CHECK(count(svg, "<title>STEP") == 0);  // zero-length steps are not drawn
  CHECK(svg.find("dapple S=4 M=8") != std::string::npos);
}
