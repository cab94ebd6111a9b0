// `loom schedule export`: a built-in schedule as a file, in loom's text or PyTorch's CSV (which
// torch.distributed.pipelining loads with _load_csv), to run it elsewhere or edit it and read it back
// with `loom simulate --schedule-file` (docs/schedules.md "Schedule files").
#include <cstdio>
#include <memory>
#include <string>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/schedule_file.h>
#include <loom/schedule/validator.h>

#include "commands.h"
#include "schedule_sizes.h"

namespace loom::apps {

namespace {

struct ScheduleExportFlags {
  schedule::ScheduleOptions schedule{"", 4, 8, 2, 3, {}};
  std::string format = "loom";
  std::string out;  // empty: stdout
};

void run_export(const ScheduleExportFlags& flags) {
  const schedule::ScheduleFileFormat format = schedule::parse_schedule_file_format(flags.format, "--format");
  check_schedule_sizes(flags.schedule);
  const schedule::Schedule sched = schedule::make_schedule(flags.schedule);
  if (format == schedule::ScheduleFileFormat::Csv)
    LOOM_CHECK(!sched.asynchronous(), "--format csv: '", sched.name,
               "' is asynchronous (weight versions, a STEP per minibatch) and PyTorch's CSV holds synchronous "
               "schedules only; use --format loom");
  if (flags.out.empty()) {
    const std::string text = schedule::write_schedule_file(sched, format);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  schedule::write_schedule_file(sched, format, flags.out);
  std::printf("wrote %s: %s, S=%d stages, M=%d micro-batches%s, %s format\n", flags.out.c_str(), sched.name.c_str(),
              sched.stages, sched.microbatches,
              sched.chunks > 1 ? (", v=" + std::to_string(sched.chunks) + " chunks").c_str() : "",
              std::string(schedule::schedule_file_format_name(format)).c_str());
}

// `loom schedule list`: a line per kind (the table of schedule_kind.cpp); --json for scripts.
void run_list(bool json) {
  if (json) {
    std::printf("%s\n", schedule::schedule_kinds_json().c_str());
    return;
  }
  std::printf("%-15s %-9s %-13s %-9s %s\n", "schedule", "chunks", "updates", "backward", "what it does");
  for (const schedule::ScheduleKindRow& row : schedule::schedule_kind_rows()) {
    const char* chunks = row.placement == schedule::ChunkPlacement::single ? "1"
                         : row.placement == schedule::ChunkPlacement::v  ? "2 in a V"
                                                                          : "--chunks";
    std::printf("%-15s %-9s %-13s %-9s %s\n", std::string(row.name).c_str(), chunks,
                row.asynchronous ? "asynchronous" : "synchronous", row.splits_backward ? "split" : "whole",
                std::string(row.summary).c_str());
  }
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("schedule", "Schedule kinds and files: list the built-in kinds, export one (loom's "
                                                 "text or PyTorch's CSV); read one back with `loom simulate --schedule-file`");
  cmd->require_subcommand(1);
  auto flags = std::make_shared<ScheduleExportFlags>();
  CLI::App* exp = cmd->add_subcommand(
      "export", "Write a built-in schedule to a file: --format loom (every action, docs/schedules.md) or csv "
                "(PyTorch's compute-only CSV, torch.distributed.pipelining's _load_csv)");
  exp->add_option("--schedule", flags->schedule.kind, "Schedule: " + schedule::schedule_kind_list("|"))->required();
  add_schedule_size_options(*exp, flags->schedule);
  exp->add_option("--format", flags->format, "File format: loom or csv")->capture_default_str();
  exp->add_option("--out", flags->out, "Write to this file (default: standard output)");
  exp->callback([flags] { run_export(*flags); });
  auto json = std::make_shared<bool>(false);
  CLI::App* list = cmd->add_subcommand("list", "The schedule kinds loom generates: chunks, updates, backward, what each "
                                                "does (--json: the same for scripts)");
  list->add_flag("--json", *json, "Print the table as JSON");
  list->callback([json] { run_list(*json); });
}

}  // namespace loom::apps
