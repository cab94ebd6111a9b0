// Schedule kinds by name (see schedule_kind.h).
#include <loom/schedule/schedule_kind.h>

#include <loom/core/error.h>

namespace loom::schedule {

const std::vector<std::string>& schedule_kinds() {
  static const std::vector<std::string> kinds = {"gpipe", "dapple", "pipedream", "pipedream-2bw",
                                                 "interleaved", "zb-h1", "zb-h2", "zb-v",
                                                 "v-half", "v-min", "looped-bfs", "interleaved-zb",
                                                 "dualpipev"};
  return kinds;
}

std::string_view schedule_kind_name(ScheduleKind kind) { return schedule_kinds().at(static_cast<std::size_t>(kind)); }

ScheduleKind parse_schedule_kind(std::string_view name, std::string_view source) {
  const auto& kinds = schedule_kinds();
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i] == name) return static_cast<ScheduleKind>(i);
  std::string known;
  for (const std::string& kind : kinds) known += (known.empty() ? "" : ", ") + kind;
  LOOM_THROW(source, source.empty() ? "" : ": ", "unknown schedule '", name, "' (known: ", known, ")");
}

bool is_asynchronous(ScheduleKind kind) {
  return kind == ScheduleKind::pipedream || kind == ScheduleKind::pipedream_2bw;
}

bool is_multi_chunk(ScheduleKind kind) {
  return kind == ScheduleKind::interleaved || kind == ScheduleKind::looped_bfs || kind == ScheduleKind::interleaved_zb ||
         is_v_shaped(kind);
}

bool is_v_shaped(ScheduleKind kind) {
  return kind == ScheduleKind::zb_v || kind == ScheduleKind::v_half || kind == ScheduleKind::v_min ||
         kind == ScheduleKind::dualpipev;
}

}  // namespace loom::schedule
