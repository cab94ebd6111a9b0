// The schedules loom knows, by kind: one table (schedule_kind.cpp), a row per kind, from which the
// CLI's names and lists, the predicates below, make_schedule(), the planner's kinds and
// `loom schedule list [--json]` (what the scripts read) are all derived. Adding a schedule means its
// generator file, its row, and its tests.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom::schedule {

struct Schedule;
struct ScheduleOptions;

enum class ScheduleKind : std::uint8_t {
  gpipe, dapple, pipedream, pipedream_2bw, interleaved, zb_h1,
  zb_h2, zb_v, v_half, v_min, looped_bfs, interleaved_zb, dualpipev,
  custom,  // a schedule read from a file: no generator, no row
};

// Where a kind puts its chunks (Schedule::placement): one chunk per stage, v chunks looped over the
// stages (chunk c of stage s = virtual stage c·S + s, --chunks), or 2 chunks in a V (v_placement).
enum class ChunkPlacement : std::uint8_t { single, looped, v };

struct ScheduleKindRow {
  ScheduleKind kind;
  std::string_view name;   // the CLI's and the files' spelling ("zb-h1")
  std::string_view title;  // for tables and plots ("ZB-H1")
  ChunkPlacement placement;
  bool asynchronous;       // PipeDream-style: weight versions, a window of batches without a flush
  bool splits_backward;    // runs the backward as BI and BW (in part, for dualpipev)
  Schedule (*generate)(const ScheduleOptions&);
  std::string_view summary;  // one line for `loom schedule list`
};

// Every generated kind, in the order the CLI lists them.
std::span<const ScheduleKindRow> schedule_kind_rows();
// A generated kind's row (custom has none: a loom::Error).
const ScheduleKindRow& schedule_kind_row(ScheduleKind kind);

std::string_view schedule_kind_name(ScheduleKind kind);  // "custom" for custom
// Unknown names: a loom::Error that lists the known ones, prefixed by `source` when given.
ScheduleKind parse_schedule_kind(std::string_view name, std::string_view source = "");
// Every generated kind's name, in the order the CLI lists them.
const std::vector<std::string>& schedule_kinds();
// Those names joined by `separator` ("gpipe, dapple, ..." or "gpipe|dapple|..."); with `asynchronous`
// given, only the kinds that are (or are not) asynchronous.
std::string schedule_kind_list(std::string_view separator, std::optional<bool> asynchronous = std::nullopt);

bool is_asynchronous(ScheduleKind kind);
// Kinds that cut the model into stages x chunks virtual stages, and of those the ones placed in a
// V, which need exactly 2 chunks. chunks_of: the chunks per stage a kind runs, given --chunks.
bool is_multi_chunk(ScheduleKind kind);
bool is_v_shaped(ScheduleKind kind);
int chunks_of(ScheduleKind kind, int requested_chunks);

// The table as JSON (`loom schedule list --json`): a list of {name, title, placement, chunks (0:
// --chunks), asynchronous, splits_backward, summary}.
std::string schedule_kinds_json();

}  // namespace loom::schedule
