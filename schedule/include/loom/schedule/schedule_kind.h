// The schedules loom knows, by kind: one vocabulary for the generators, `loom train`, plan files
// and the planner. Names are what the CLI and files use ("gpipe", "dapple", "pipedream",
// "pipedream-2bw", "interleaved", "zb-h1").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::schedule {

enum class ScheduleKind : std::uint8_t { gpipe, dapple, pipedream, pipedream_2bw, interleaved, zb_h1 };

std::string_view schedule_kind_name(ScheduleKind kind);
// Unknown names: a loom::Error that lists the known ones, prefixed by `source` when given.
ScheduleKind parse_schedule_kind(std::string_view name, std::string_view source = "");
// Every name, in the order the CLI lists them.
const std::vector<std::string>& schedule_kinds();

// PipeDream-style schedules update weights without a flush (weight versions, a window of batches).
bool is_asynchronous(ScheduleKind kind);

}  // namespace loom::schedule
