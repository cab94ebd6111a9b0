// The schedules loom knows, by kind: one vocabulary for the generators, `loom train`, plan files
// and the planner. Names are what the CLI and files use ("gpipe", "dapple", "pipedream",
// "pipedream-2bw", "interleaved", "zb-h1").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::schedule {

enum class ScheduleKind : std::uint8_t {
  gpipe, dapple, pipedream, pipedream_2bw, interleaved, zb_h1,
  zb_h2, zb_v, v_half, v_min, looped_bfs, interleaved_zb, dualpipev,
};

std::string_view schedule_kind_name(ScheduleKind kind);
// Unknown names: a loom::Error that lists the known ones, prefixed by `source` when given.
ScheduleKind parse_schedule_kind(std::string_view name, std::string_view source = "");
// Every name, in the order the CLI lists them.
const std::vector<std::string>& schedule_kinds();

// PipeDream-style schedules update weights without a flush (weight versions, a window of batches).
bool is_asynchronous(ScheduleKind kind);
// Kinds that cut the model into stages x chunks virtual stages (--chunks), and of those the ones
// placed in a V (v_placement), which need exactly 2 chunks.
bool is_multi_chunk(ScheduleKind kind);
bool is_v_shaped(ScheduleKind kind);

}  // namespace loom::schedule
