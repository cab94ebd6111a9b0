// Schedule files: every built-in schedule through PyTorch's CSV and loom's text and back to the same
// IR, hand-written CSVs in PyTorch's notation, and the errors that point at a rank and a cell.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>
#include <loom/schedule/text.h>
#include <loom/schedule/validator.h>

using namespace loom::schedule;

namespace {

// The CSV as read, renamed to compare with a generator's schedule (a CSV names no schedule).
Schedule from_csv(const std::string& text, const std::string& name, const ScheduleFileOptions& options = {}) {
  Schedule schedule = parse_schedule_file(text, "test.csv", options);
  CHECK(schedule.name == "custom");
  schedule.name = name;
  return schedule;
}

void require_valid(const Schedule& schedule) {
  const ValidationReport report = validate(schedule);
  INFO((report.errors.empty() ? "" : report.errors.front()));
  REQUIRE(report.ok());
}

// The error parse_csv_schedule gives for `text` (read as "bad.csv").
std::string csv_error(const std::string& text, const ScheduleFileOptions& options = {}) {
  try {
    (void)parse_csv_schedule(text, "bad.csv", options);
  } catch (const loom::Error& e) {
    return e.what();
  }
  FAIL("no error for:\n" << text);
  return "";
}

}  // namespace

TEST_CASE("every built-in schedule survives the CSV and loom's text") {
  for (const std::string& kind : schedule_kinds()) {
    for (const auto& [stages, microbatches] : {std::pair{4, 8}, std::pair{2, 4}}) {
      INFO(kind << " S=" << stages << " M=" << microbatches);
      ScheduleOptions options{kind, stages, microbatches, 2, 3, {}};
      Schedule expected;
      try {
        expected = make_schedule(options);
      } catch (const loom::Error& e) {
        if (std::string(e.what()).find("not implemented yet") == std::string::npos) throw;
        WARN("skipped " << kind << ": " << e.what());
        continue;
      }
      const std::string text = write_schedule_file(expected, ScheduleFileFormat::Loom);
      CHECK(detect_schedule_file_format(text, "t") == ScheduleFileFormat::Loom);
      CHECK(parse_schedule_file(text, kind + ".txt") == expected);
      if (expected.asynchronous()) {
        CHECK_THROWS_WITH(to_csv(expected), Catch::Contains("asynchronous") && Catch::Contains("synchronous schedules only"));
        continue;
      }
      const std::string csv = write_schedule_file(expected, ScheduleFileFormat::Csv);
      CHECK(detect_schedule_file_format(csv, "t") == ScheduleFileFormat::Csv);
      CHECK(from_csv(csv, expected.name) == expected);
      CHECK(from_csv(csv, expected.name, {expected.microbatches}) == expected);
    }
  }
}

TEST_CASE("files on disk: written, detected and read back") {
  char dir[] = "/tmp/loom-schedule-file-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  const Schedule expected = interleaved(2, 4, 2);
  for (ScheduleFileFormat format : {ScheduleFileFormat::Csv, ScheduleFileFormat::Loom}) {
    const std::string path = std::string(dir) + "/s." + std::string(schedule_file_format_name(format));
    write_schedule_file(expected, format, path);
    Schedule read = read_schedule_file(path);
    if (format == ScheduleFileFormat::Csv) read.name = expected.name;
    CHECK(read == expected);
    std::remove(path.c_str());
  }
  ::rmdir(dir);
  CHECK_THROWS_WITH(read_schedule_file("/nonexistent/s.csv"),
                    Catch::Contains("/nonexistent/s.csv: cannot read the schedule file"));
  CHECK(parse_schedule_file_format("csv") == ScheduleFileFormat::Csv);
  CHECK_THROWS_WITH(parse_schedule_file_format("json", "--format"), Catch::Contains("--format: unknown schedule file format 'json'"));
}

TEST_CASE("to_csv writes PyTorch's cells, one row per rank ending in CRLF") {
  CHECK(to_csv(gpipe(2, 2)) == "0F0,0F1,0B0,0B1\r\n1F0,1F1,1B0,1B1\r\n");
  CHECK(to_csv(zb_h1(2, 2)) == "0F0,0F1,0I0,0W0,0I1,0W1\r\n1F0,1I0,1F1,1I1,1W0,1W1\r\n");
  CHECK(to_csv(interleaved(2, 2, 2)).substr(0, 16) == "0F0,0F1,2F0,2F1,");
}

TEST_CASE("hand-written CSVs in PyTorch's notation: GPipe and 1F1B") {
  // GPipe, S = 2, M = 4, idle cells where PyTorch's timestep grid has them.
  CHECK(from_csv("0F0,0F1,0F2,0F3,,,0B0,0B1,0B2,0B3\r\n"
                 ",1F0,1F1,1F2,1F3,1B0,1B1,1B2,1B3\r\n", "gpipe") == gpipe(2, 4));
  // PyTorch's Schedule1F1B, S = 4, M = 4, as its pipeline order dumps it (idle steps, REDUCE_GRAD):
  // DAPPLE's K_s = S − s warm-up.
  const Schedule one_f_one_b = from_csv(
      "0F0,0F1,0F2,,,,,,,0F3,0B0,,0B1,,0B2,,0B3,0REDUCE_GRAD\r\n"
      ",1F0,1F1,,,,,1F2,1B0,1F3,1B1,,1B2,,1B3,1REDUCE_GRAD\r\n"
      ",,2F0,,,2F1,2B0,2F2,2B1,2F3,2B2,,2B3,2REDUCE_GRAD\r\n"
      ",,,3F0,3B0,3F1,3B1,3F2,3B2,3F3,3B3,3REDUCE_GRAD\r\n",
      "dapple");
  CHECK(one_f_one_b == dapple(4, 4));
  CHECK(one_f_one_b.placement.empty());
  // S = 2 with the transfers PyTorch's lowering adds, and a file without its last newline.
  CHECK(from_csv("0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0F2,0SEND_F2,0RECV_B1,0B1,0F3,0SEND_F3,0RECV_B2,0B2,0RECV_B3,0B3\n"
                 "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1F2,1B2,1F3,1B3",
                 "dapple") == dapple(2, 4));
}

TEST_CASE("hand-written CSVs: interleaved 1F1B (looped) and a V placement come from the file") {
  const Schedule looped = from_csv(
      "0F0,0F1,2F0,2F1,0F2,2B0,0F3,2B1,2F2,0B0,2F3,0B1,2B2,2B3,0B2,0B3\r\n"
      "1F0,1F1,3F0,3B0,3F1,3B1,1F2,1B0,1F3,1B1,3F2,3B2,3F3,3B3,1B2,1B3\r\n",
      "interleaved");
  CHECK(looped.chunks == 2);
  CHECK(looped.placement.empty());  // stage c·S + s on rank s: the default
  CHECK(looped == interleaved(2, 4, 2));

  // V: rank 0 holds stages 0 and 3, rank 1 stages 1 and 2 (a local hand-over between 1 and 2).
  const std::string v_text =
      "0F0,0F1,3F0,3B0,3F1,3B1,0B0,0B1\r\n"
      "1F0,2F0,1F1,2F1,2B0,1B0,2B1,1B1\r\n";
  const Schedule v = from_csv(v_text, "v");
  CHECK(v.stages == 2);
  CHECK(v.chunks == 2);
  CHECK(v.microbatches == 2);
  CHECK(v.placement == v_placement(2));
  CHECK(v.programs[0].back() == optimizer_step());
  require_valid(v);
  CHECK(to_csv(v) == v_text);
  // Loom's text keeps the placement.
  CHECK(parse_schedule_file(write_schedule_file(v, ScheduleFileFormat::Loom), "v.txt") == v);
}

TEST_CASE("a CSV that cannot run: FILE: rank R, step K: 'CELL': why") {
  // A backward before its forward.
  CHECK_THAT(csv_error("0F0,0B1,0F1,0B0\r\n1F0,1B0,1F1,1B1\r\n"),
             Catch::StartsWith("bad.csv: rank 0, step 2: '0B1': backward B with no forward before it"));
  CHECK_THAT(csv_error("0F0,0B0\r\n1I0,1F0,1W0\r\n"),
             Catch::StartsWith("bad.csv: rank 1, step 1: '1I0': input backward I with no forward before it"));
  // A micro-batch outside 0..M−1 for a given M, and an M the file does not cover.
  CHECK_THAT(csv_error("0F0,0F1,0F2,0B0,0B1,0B2\r\n", {2}),
             Catch::StartsWith("bad.csv: rank 0, step 3: '0F2': micro-batch 2 is outside 0..1"));
  CHECK_THAT(csv_error("0F0,0B0\r\n1F0,1B0\r\n", {4}),
             Catch::StartsWith("bad.csv: the file's micro-batches are 0..0 (M = 1), but 4 were asked for"));
  // W before its I, W after a full B, I without W.
  CHECK_THAT(csv_error("0F0,0I0,0W0\r\n1F0,1W0,1I0\r\n"),
             Catch::StartsWith("bad.csv: rank 1, step 2: '1W0': weight backward W before its input backward I"));
  CHECK_THAT(csv_error("0F0,0B0,0W0\r\n"), Catch::StartsWith("bad.csv: rank 0, step 3: '0W0': weight backward W after a full backward B"));
  CHECK_THAT(csv_error("0F0, 0I0 \r\n"), Catch::StartsWith("bad.csv: rank 0, step 2: ' 0I0 ': input backward I with no weight backward W"));
  // A stage on two ranks.
  CHECK_THAT(csv_error("0F0,1F0,1B0,0B0\r\n1F1,1B1\r\n"),
             Catch::StartsWith("bad.csv: rank 1, step 1: '1F1': stage 1 is on two ranks (rank 0 runs it at step 2)"));
  // A deadlock (the validator's finding, located at the cell whose receive never arrives).
  CHECK_THAT(csv_error("0F0,0B0,0F1,0B1\r\n1F1,1B1,1F0,1B0\r\n"),
             Catch::StartsWith("bad.csv: rank 0, step 2: '0B0': deadlock under the executor's semantics"));
  // A V placement whose local hand-over runs backwards (stage 2 before stage 1 on rank 1).
  CHECK_THAT(csv_error("0F0,3F0,3B0,0B0\r\n2F0,1F0,2B0,1B0\r\n"),
             Catch::StartsWith("bad.csv: rank 1, step 1: '2F0': "));
  // An overlapped pair is a forward, then a full backward (dualpipev_test.cpp has more).
  CHECK_THAT(csv_error("0F0,0F1,(0B0;0F2)OVERLAP_F_B,0B1,0B2\r\n"),
             Catch::StartsWith("bad.csv: rank 0, step 3: '(0B0;0F2)OVERLAP_F_B': an overlapped pair runs a forward F"));
}

TEST_CASE("bad cells and files say what is wrong") {
  CHECK_THAT(csv_error("0F0,0X0\r\n"), Catch::StartsWith("bad.csv: rank 0, step 2: '0X0': unknown action type 'X'"));
  CHECK_THAT(csv_error("0F0,F0\r\n"), Catch::StartsWith("bad.csv: rank 0, step 2: 'F0': not a PyTorch action"));
  CHECK_THAT(csv_error("0F0,0B\r\n"), Catch::StartsWith("bad.csv: rank 0, step 2: '0B': B needs a micro-batch number"));
  CHECK_THAT(csv_error("0F0,0B0x\r\n"), Catch::StartsWith("bad.csv: rank 0, step 2: '0B0x': unexpected 'x'"));
  CHECK_THAT(csv_error("0F0,0BW0\r\n"), Catch::StartsWith("bad.csv: rank 0, step 2: '0BW0': 'BW' is ambiguous"));
  CHECK_THAT(csv_error("0F0,0B0,0F0\r\n"), Catch::StartsWith("bad.csv: rank 0, step 3: '0F0': a second forward"));
  CHECK_THAT(csv_error("0F99999999999\r\n"), Catch::Contains("micro-batch index beyond the largest"));
  CHECK_THAT(csv_error("99999999F0\r\n"), Catch::Contains("stage index beyond the largest loom places"));
  CHECK_THAT(csv_error("0F0,\"0B0\r\n"), Catch::Contains("a quoted cell is not closed"));
  CHECK_THAT(csv_error("0F0,0B0\r\n\r\n1F0,1B0\r\n"), Catch::StartsWith("bad.csv: rank 1: the row has no compute action"));
  CHECK_THAT(csv_error("0F0,0B0\r\n2F0,2B0\r\n"), Catch::StartsWith("bad.csv: no rank runs stage 1"));
  CHECK_THAT(csv_error("0F0,2F0,2B0,0B0\r\n1F0,1B0\r\n"),
             Catch::StartsWith("bad.csv: rank 1: holds 1 stages but rank 0 holds 2"));
  CHECK_THAT(csv_error("0F0,0F2,0B0,0B2\r\n"), Catch::StartsWith("bad.csv: rank 0: stage 0 has no forward of micro-batch 1"));
  CHECK_THAT(csv_error("0F0,0F1,0B0\r\n"), Catch::StartsWith("bad.csv: rank 0: stage 0 has no backward of micro-batch 1"));
  // Quoting as Python's csv writes it, and blank lines at the end (not ranks).
  CHECK(parse_csv_schedule("\"0F0\",0B0\r\n\r\n\n", "q.csv").programs[0].size() == 4);
}

TEST_CASE("the format is told by the content; every error names the file") {
  CHECK(detect_schedule_file_format("# a comment\n\nschedule x\nstage 0: F0 B0 AR STEP\n", "f") == ScheduleFileFormat::Loom);
  CHECK(detect_schedule_file_format("stage 0: F0 B0 AR STEP\n", "f") == ScheduleFileFormat::Loom);
  CHECK(detect_schedule_file_format("0F0\r\n", "f") == ScheduleFileFormat::Csv);
  CHECK(detect_schedule_file_format(",1F0,1B0\r\n", "f") == ScheduleFileFormat::Csv);
  CHECK_THROWS_WITH(detect_schedule_file_format("hello world\n", "f.txt"), Catch::StartsWith("f.txt: not a schedule file"));
  CHECK_THROWS_WITH(detect_schedule_file_format("\n\n", "f.txt"), Catch::StartsWith("f.txt: the schedule file is empty"));
  CHECK_THROWS_WITH(parse_schedule_file("stage 0: F0 B0 AR STEP\n", "f.txt", {2}),
                    Catch::StartsWith("f.txt: the schedule's micro-batches are 0..0 (M = 1), but 2 were asked for"));
  CHECK_THROWS_WITH(parse_schedule_file("stage 0: F0 AR STEP\n", "f.txt"), Catch::StartsWith("f.txt: invalid schedule"));
}
