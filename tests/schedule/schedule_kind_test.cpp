// The table of schedule kinds (schedule_kind.h) against what each generator makes: the row's
// placement, chunks, asynchrony and split backward are read off the generated programs, so a row
// that misdescribes its generator fails here. And --schedule K with a schedule file
// (check_file_is_kind): the same programs pass, others are refused naming what differs.
#include <algorithm>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>

using namespace loom::schedule;

namespace {

bool has_split_backward(const Schedule& schedule) {
  for (const auto& program : schedule.programs)
    for (const Action& a : program)
      if (a.op == Op::BackwardInput || a.op == Op::BackwardWeight) return true;
  return false;
}

}  // namespace

TEST_CASE("each row of the kind table describes what its generator makes") {
  std::set<std::string> names;
  for (const ScheduleKindRow& row : schedule_kind_rows()) {
    INFO(row.name);
    CHECK(names.insert(std::string(row.name)).second);
    CHECK(parse_schedule_kind(row.name) == row.kind);
    ScheduleOptions options;
    options.stages = 4;
    options.microbatches = 8;
    options.chunks = 3;
    const Schedule s = make_schedule(row.kind, options);
    CHECK(s.kind == row.kind);
    CHECK(s.name == row.name);
    CHECK(s.asynchronous() == row.asynchronous);
    CHECK(has_split_backward(s) == row.splits_backward);
    switch (row.placement) {
      case ChunkPlacement::single: CHECK((s.chunks == 1 && s.placement.empty())); break;
      case ChunkPlacement::looped: CHECK((s.chunks == 3 && s.placement.empty())); break;
      case ChunkPlacement::v: CHECK((s.chunks == 2 && s.placement == v_placement(4))); break;
    }
    CHECK(chunks_of(row.kind, 3) == s.chunks);
  }
  CHECK(names.size() == schedule_kinds().size());
  CHECK(schedule_kind_name(ScheduleKind::custom) == "custom");
  CHECK_THROWS_AS(schedule_kind_row(ScheduleKind::custom), loom::Error);
}

TEST_CASE("the kinds' JSON lists every row") {
  const nlohmann::json kinds = nlohmann::json::parse(schedule_kinds_json());
  REQUIRE(kinds.size() == schedule_kind_rows().size());
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const ScheduleKindRow& row = schedule_kind_rows()[i];
    CHECK(kinds[i]["name"] == std::string(row.name));
    CHECK(kinds[i]["splits_backward"] == row.splits_backward);
    CHECK(kinds[i]["chunks"] == (row.placement == ChunkPlacement::single ? 1 : row.placement == ChunkPlacement::v ? 2 : 0));
  }
}

TEST_CASE("--schedule with a schedule file: the kind's programs pass, others are refused") {
  ScheduleOptions options;
  options.stages = 3;
  options.microbatches = 6;
  const Schedule dapple_file = parse_csv_schedule(to_csv(make_schedule(ScheduleKind::dapple, options)), "d.csv");
  CHECK(dapple_file.kind == ScheduleKind::custom);
  CHECK_NOTHROW(check_file_is_kind(dapple_file, ScheduleKind::dapple, "d.csv", {}));
  CHECK_THROWS_WITH(check_file_is_kind(dapple_file, ScheduleKind::gpipe, "d.csv", {}),
                    Catch::StartsWith("--schedule gpipe does not match d.csv: the file is not gpipe's schedule for S=3, M=6, v=1 (stage 0 "
                    "differs); leave --schedule out to use the file as it is"));
  CHECK_THROWS_WITH(check_file_is_kind(dapple_file, ScheduleKind::zb_v, "d.csv", {}),
                    Catch::Contains("(zb-v runs v=2)"));
  ScheduleOptions warm;
  warm.warmup = {1};  // K_s = max(1 - s, 1): not DAPPLE's default depths, so stage 0 differs
  CHECK_THROWS_WITH(check_file_is_kind(dapple_file, ScheduleKind::dapple, "d.csv", warm),
                    Catch::Contains("(stage 0 differs)"));
  Schedule named = make_schedule(ScheduleKind::gpipe, options);
  CHECK_THROWS_WITH(check_file_is_kind(named, ScheduleKind::dapple, "g.txt", {}),
                    Catch::StartsWith("--schedule dapple does not match g.txt, which holds schedule 'gpipe' (leave "
                                      "--schedule out: the file sets it)"));
}
