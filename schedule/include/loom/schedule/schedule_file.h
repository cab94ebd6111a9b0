// Schedules from files: loom's text form (text.h) and PyTorch's compute-only CSV (what
// torch.distributed.pipelining writes with `_dump_csv` and reads with `_load_csv`), read, validated
// and written. docs/schedules.md "Schedule files" describes both.
//
// The CSV has one row per rank, no header; each cell is one action of that rank, in order:
//   0F0   stage 0, forward, micro-batch 0        (loom F)
//   1B0   stage 1, full backward, micro-batch 0  (loom B)
//   1I3   input-gradient backward               (loom BI)
//   2W1   weight-gradient backward              (loom BW)
//   (0F7;7B3)OVERLAP_F_B  an overlapped pair: F and B run as one action (loom (F7c0;B3c1), overlap.h)
// an empty cell is an idle step. PyTorch's stage is loom's virtual stage: a rank's chunks are the
// distinct stages its row names, in increasing order, so the placement (looped, V, ...) comes from
// the file. Cells for what loom derives itself (SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD,
// REDUCE_GRAD) are ignored; loom adds the transfers (with_communication), then AR and STEP.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <loom/schedule/schedule.h>

namespace loom::schedule {

enum class ScheduleFileFormat {
  Loom,  // text.h: "schedule NAME", "placement ...", "stage N: ..." lines
  Csv,   // PyTorch's compute-only CSV
};

// "loom" or "csv"; other names get a loom::Error prefixed by `source` (a flag, a file) when given.
ScheduleFileFormat parse_schedule_file_format(std::string_view name, std::string_view source = "");
std::string_view schedule_file_format_name(ScheduleFileFormat format);

struct ScheduleFileOptions {
  int microbatches = 0;  // M the caller expects (e.g. --microbatches); 0: whatever the file says
};

// Parses and validates PyTorch's CSV; the schedule is named "custom". M is the largest micro-batch
// index + 1 (options.microbatches, when set, must agree). A file that cannot run gets one
// loom::Error: "SOURCE: rank R, step K: 'CELL': why" (R the 0-based row, K the 1-based cell, the cell
// as written), or "SOURCE: rank R: why" when no one cell is to blame.
Schedule parse_csv_schedule(std::string_view text, const std::string& source = "<csv>",
                            const ScheduleFileOptions& options = {});

// The compute actions of a synchronous schedule as PyTorch's CSV (rows end in "\r\n"), so a schedule
// designed with loom runs under torch.distributed.pipelining. Asynchronous schedules (weight
// versions, a STEP per minibatch) have no CSV form: loom::Error.
std::string to_csv(const Schedule& schedule);

// The format of a file's content: loom's text starts (after blank and '#' lines) with a
// `schedule`, `placement` or `stage` line; a CSV has commas or starts with a cell such as 0F0.
ScheduleFileFormat detect_schedule_file_format(std::string_view text, const std::string& source);

// Parses either format (detected from the content) and validates it; every error names `source`.
Schedule parse_schedule_file(std::string_view text, const std::string& source, const ScheduleFileOptions& options = {});

// Reads the file at `path` and parse_schedule_file()s it.
Schedule read_schedule_file(const std::string& path, const ScheduleFileOptions& options = {});

// For `--schedule K` given with a schedule file: `file` (read from `path`) must be what kind K's
// generator makes at the file's S, M and v (with `base`'s warm-up and window); otherwise a loom::Error
// naming the path and the first stage that differs, and saying to leave --schedule out.
void check_file_is_kind(const Schedule& file, ScheduleKind kind, const std::string& path, const ScheduleOptions& base);

// What the flags given with a schedule file say of it (`loom train` and `loom simulate`): 0 or unset
// where the flag was not given, so the file sets it.
struct ScheduleFileFlags {
  int stages = 0;        // --stages: the file's S
  int chunks = 0;        // --chunks: its v
  int microbatches = 0;  // --microbatches: its M
  std::optional<ScheduleKind> kind;  // --schedule: its programs are this kind's (check_file_is_kind)
  std::vector<int> warmup;           // --warmup: that kind's warm-up
};
// read_schedule_file(path), then each flag given checked against the file: one loom::Error naming the
// flag and the file, and saying to leave the flag out.
Schedule load_schedule_file(const std::string& path, const ScheduleFileFlags& flags);

// The file's content in `format` (to_text() with transfers, or to_csv()).
std::string write_schedule_file(const Schedule& schedule, ScheduleFileFormat format);
// The same, written to `path`; errors name the file.
void write_schedule_file(const Schedule& schedule, ScheduleFileFormat format, const std::string& path);

}  // namespace loom::schedule
