// loom's generators against PyTorch's own schedule classes (issue 28): the compute order PyTorch 2.x
// computes for ScheduleLoopedBFS, ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble,
// ScheduleInterleaved1F1B and ScheduleDualPipeV (its overlapped pairs included) at S = 4 ranks, 2 stages per rank, M = 8, written once as CSV by
// scripts/pytorch_schedule_orders.py into tests/schedule/pytorch/ (its README.md has the torch
// version, the command and the date). Each file is read with parse_csv_schedule; per rank, the
// sequence of compute actions (op, micro-batch, virtual stage) must equal the generator's, and so
// must the virtual stages each rank holds. PyTorch's idle cells (lockstep padding) are not actions.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>

using namespace loom::schedule;

namespace {

constexpr int kStages = 4;
constexpr int kMicrobatches = 8;
constexpr int kChunks = 2;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// One compute action as PyTorch names it: op, micro-batch, virtual stage (PyTorch's stage index).
struct Compute {
  Op op;
  int microbatch;
  int virtual_stage;
  Overlap overlap;
  friend bool operator==(const Compute&, const Compute&) = default;
};

std::string to_string(const Compute& c) {
  const char* op = c.op == Op::Forward          ? "F"
                   : c.op == Op::Backward       ? "B"
                   : c.op == Op::BackwardInput  ? "I"
                   : c.op == Op::BackwardWeight ? "W"
                                                : "?";
  const std::string cell = std::to_string(c.virtual_stage) + op + std::to_string(c.microbatch);  // PyTorch's cell
  return c.overlap == Overlap::none ? cell : cell + (c.overlap == Overlap::forward_half ? " (overlapped, first)" : " (overlapped, second)");
}

std::vector<Compute> compute_order(const Schedule& schedule, int stage) {
  std::vector<Compute> order;
  for (const Action& a : schedule.programs.at(static_cast<std::size_t>(stage)))
    if (is_compute(a.op)) order.push_back({a.op, a.microbatch, schedule.virtual_stage(stage, a.chunk), a.overlap});
  return order;
}

std::set<int> held_virtual_stages(const Schedule& schedule, int stage) {
  std::set<int> held;
  for (int c = 0; c < schedule.chunks; ++c) held.insert(schedule.virtual_stage(stage, c));
  return held;
}

struct Loaded {
  Schedule pytorch;
  Schedule loom;
};

Loaded load(const std::string& kind) {
  const std::string path = std::string(LOOM_SOURCE_DIR) + "/tests/schedule/pytorch/" + kind + "-s4-m8.csv";
  INFO(path);
  Loaded both{parse_csv_schedule(read_file(path), path, {kMicrobatches}),
              make_schedule(ScheduleOptions{kind, kStages, kMicrobatches, kChunks, 3, {}})};
  REQUIRE(both.pytorch.stages == kStages);
  REQUIRE(both.pytorch.microbatches == kMicrobatches);
  REQUIRE(both.pytorch.chunks == kChunks);
  REQUIRE(both.loom.stages == kStages);
  REQUIRE(both.loom.chunks == kChunks);
  return both;
}

// The first position where the two orders of `stage` differ, or -1 when they are equal.
int first_difference(const std::vector<Compute>& a, const std::vector<Compute>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (!(a[i] == b[i])) return static_cast<int>(i);
  return a.size() == b.size() ? -1 : static_cast<int>(n);
}

void check_same_order(const std::string& kind) {
  const Loaded both = load(kind);
  for (int rank = 0; rank < kStages; ++rank) {
    INFO(kind << ", rank " << rank);
    CHECK(held_virtual_stages(both.loom, rank) == held_virtual_stages(both.pytorch, rank));
    const std::vector<Compute> expected = compute_order(both.pytorch, rank);
    const std::vector<Compute> actual = compute_order(both.loom, rank);
    if (kind != "dualpipev")  // DualPipeV mixes full and split backwards
      CHECK(expected.size() == static_cast<std::size_t>(kMicrobatches * kChunks * (kind == "looped-bfs" || kind == "interleaved" ? 2 : 3)));
    const int at = first_difference(expected, actual);
    INFO("first difference at position " << at << ": PyTorch "
                                         << (at >= 0 && at < static_cast<int>(expected.size()) ? to_string(expected[static_cast<std::size_t>(at)]) : "(end)")
                                         << ", loom "
                                         << (at >= 0 && at < static_cast<int>(actual.size()) ? to_string(actual[static_cast<std::size_t>(at)]) : "(end)"));
    CHECK(at == -1);
  }
}

}  // namespace

TEST_CASE("looped-bfs is PyTorch's ScheduleLoopedBFS (S=4, M=8, 2 stages per rank)") { check_same_order("looped-bfs"); }

TEST_CASE("interleaved-zb is PyTorch's ScheduleInterleavedZeroBubble (S=4, M=8, 2 stages per rank)") {
  check_same_order("interleaved-zb");
}

TEST_CASE("zb-v is PyTorch's ScheduleZBVZeroBubble (S=4, M=8, 2 stages per rank)") { check_same_order("zb-v"); }

TEST_CASE("interleaved is PyTorch's ScheduleInterleaved1F1B (S=4, M=8, 2 stages per rank)") {
  check_same_order("interleaved");
}

TEST_CASE("dualpipev is PyTorch's ScheduleDualPipeV, overlapped pairs included (S=4, M=8, 2 stages per rank)") {
  check_same_order("dualpipev");
  const Loaded both = load("dualpipev");
  int pairs = 0;
  for (const auto& program : both.pytorch.programs)
    for (const Action& a : program) pairs += a.overlap == Overlap::forward_half;
  CHECK(pairs == 5 + 6 + 7 + 7);  // the (0F7;7B3)OVERLAP_F_B cells of the file, rank 0 to 3
  for (int rank = 0; rank < kStages; ++rank)
    CHECK(held_virtual_stages(both.pytorch, rank) == std::set<int>{rank, 2 * kStages - 1 - rank});
}

TEST_CASE("the placements are PyTorch's: looped for BFS and interleaved, V for ZB-V") {
  // PyTorch's generate_stage_to_rank_mapping: "loop" puts stage i on rank i % S; "v" on rank i for
  // i < S and 2S - 1 - i after the turn.
  for (const std::string kind : {"looped-bfs", "interleaved-zb", "interleaved"}) {
    const Schedule pytorch = load(kind).pytorch;
    for (int rank = 0; rank < kStages; ++rank) CHECK(held_virtual_stages(pytorch, rank) == std::set<int>{rank, rank + kStages});
  }
  const Schedule pytorch = load("zb-v").pytorch;
  for (int rank = 0; rank < kStages; ++rank)
    CHECK(held_virtual_stages(pytorch, rank) == std::set<int>{rank, 2 * kStages - 1 - rank});
}
