// WeightStash by hand, one rank: a two-version program (F0@0 F1@0 B0@0 STEP F2@1 B1@0 STEP B2@1,
// PipeDream's stage 0 with two in flight) where the STEP is played by adding 1 to the value. With
// stashing, B1@0 sees version 0's value although a STEP ran after its forward; with the
// experiment's switch off, it sees the newest value (what --no-weight-stashing-experiment runs).
#include <catch2/catch.hpp>

#include <loom/runtime/weight_stash.h>
#include <loom/schedule/text.h>

using namespace loom;

namespace {
// Walks the program, recording the value each backward ran with.
std::vector<float> backward_values(bool stashing_off) {
  runtime::set_weight_stashing_off_for_experiment(stashing_off);
  Parameter p = make_parameter("weight", Shape{1}, Init::zeros());
  const std::vector<schedule::Action> program = schedule::parse_program("F0@0 F1@0 B0@0 STEP F2@1 B1@0 STEP B2@1");
  runtime::WeightStash stash({&p}, program);
  runtime::set_weight_stashing_off_for_experiment(false);
  stash.begin_run();
  std::vector<float> seen;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const schedule::Action& a = program[i];
    if (a.op == schedule::Op::Step) {
      stash.before_step(i);
      p.value.data<float>()[0] += 1;  // in place, as the optimizer updates
      stash.after_step();
      continue;
    }
    stash.enter(a.version);
    if (a.op == schedule::Op::Backward) seen.push_back(p.value.data<float>()[0]);
    stash.leave(a.version, i);
  }
  stash.check_empty();
  return seen;
}
}  // namespace

TEST_CASE("weight stash: a backward runs with its forward's version", "[runtime][stash]") {
  CHECK(backward_values(false) == std::vector<float>{0, 0, 1});
}

TEST_CASE("weight stash: the experiment's switch runs every backward with the newest weights", "[runtime][stash]") {
  CHECK(backward_values(true) == std::vector<float>{0, 1, 2});
}
