// The table of schedule kinds (see schedule_kind.h) and what is derived from it.
#include <loom/schedule/schedule_kind.h>

#include <array>

#include <nlohmann/json.hpp>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>

namespace loom::schedule {

namespace {

using P = ChunkPlacement;
using K = ScheduleKind;
using O = ScheduleOptions;

// A row per generated kind, in enum order (the CLI's order).
constexpr std::array kRows{
    ScheduleKindRow{K::gpipe, "gpipe", "GPipe", P::single, false, false,
                    [](const O& o) { return gpipe(o.stages, o.microbatches); },
                    "all forwards, then all backwards; holds M micro-batches"},
    ScheduleKindRow{K::dapple, "dapple", "1F1B (DAPPLE)", P::single, false, false,
                    [](const O& o) { return dapple(o.stages, o.microbatches, o.warmup); },
                    "synchronous 1F1B with early backward (--warmup K)"},
    ScheduleKindRow{K::pipedream, "pipedream", "PipeDream", P::single, true, false,
                    [](const O& o) { return pipedream(o.stages, o.microbatches, o.warmup); },
                    "asynchronous 1F1B with weight stashing, a STEP per minibatch"},
    ScheduleKindRow{K::pipedream_2bw, "pipedream-2bw", "PipeDream-2BW", P::single, true, false,
                    [](const O& o) { return pipedream_2bw(o.stages, o.microbatches, o.minibatches, o.warmup); },
                    "asynchronous 1F1B, two weight versions, a STEP per minibatch of M micro-batches"},
    ScheduleKindRow{K::interleaved, "interleaved", "Interleaved 1F1B", P::looped, false, false,
                    [](const O& o) { return interleaved(o.stages, o.microbatches, o.chunks); },
                    "Megatron-LM's interleaved 1F1B on --chunks virtual stages per rank"},
    ScheduleKindRow{K::zb_h1, "zb-h1", "ZB-H1", P::single, false, true,
                    [](const O& o) { return zb_h1(o.stages, o.microbatches); },
                    "zero bubble at 1F1B's memory: weight gradients fill the cool-down"},
    ScheduleKindRow{K::zb_h2, "zb-h2", "ZB-H2", P::single, false, true,
                    [](const O& o) { return zb_h2(o.stages, o.microbatches); },
                    "zero bubble inside the step at (2S-1)/S of 1F1B's memory"},
    ScheduleKindRow{K::zb_v, "zb-v", "ZB-V", P::v, false, true,
                    [](const O& o) { return zb_v(o.stages, o.microbatches); },
                    "zero bubble on 2 chunks in a V at 1F1B's memory"},
    ScheduleKindRow{K::v_half, "v-half", "V-Half", P::v, false, true,
                    [](const O& o) { return v_half(o.stages, o.microbatches); },
                    "2 chunks in a V at half of 1F1B's activation memory"},
    ScheduleKindRow{K::v_min, "v-min", "V-Min", P::v, false, true,
                    [](const O& o) { return v_min(o.stages, o.microbatches); },
                    "2 chunks in a V at a third of 1F1B's activation memory"},
    ScheduleKindRow{K::looped_bfs, "looped-bfs", "Looped BFS", P::looped, false, false,
                    [](const O& o) { return looped_bfs(o.stages, o.microbatches, o.chunks); },
                    "PyTorch's looped BFS: every forward of a chunk, breadth first (--chunks)"},
    ScheduleKindRow{K::interleaved_zb, "interleaved-zb", "Interleaved ZB", P::looped, false, true,
                    [](const O& o) { return interleaved_zb(o.stages, o.microbatches, o.chunks); },
                    "PyTorch's interleaved zero bubble: interleaved 1F1B with a split backward (--chunks)"},
    ScheduleKindRow{K::dualpipev, "dualpipev", "DualPipeV", P::v, false, true,
                    [](const O& o) { return dualpipev(o.stages, o.microbatches); },
                    "DeepSeek's DualPipe on a V: overlapped forward/backward pairs"},
};

constexpr bool rows_in_enum_order() {
  for (std::size_t i = 0; i < kRows.size(); ++i)
    if (static_cast<std::size_t>(kRows[i].kind) != i) return false;
  return kRows.size() == static_cast<std::size_t>(K::custom);
}
static_assert(rows_in_enum_order(), "kRows: one row per generated ScheduleKind, in enum order");

std::string_view placement_name(ChunkPlacement placement) {
  return placement == P::single ? "single" : placement == P::looped ? "looped" : "v";
}

}  // namespace

std::span<const ScheduleKindRow> schedule_kind_rows() { return kRows; }

const ScheduleKindRow& schedule_kind_row(ScheduleKind kind) {
  LOOM_CHECK(kind != K::custom, "a schedule read from a file (custom) has no generator");
  return kRows.at(static_cast<std::size_t>(kind));
}

std::string_view schedule_kind_name(ScheduleKind kind) {
  return kind == K::custom ? "custom" : schedule_kind_row(kind).name;
}

const std::vector<std::string>& schedule_kinds() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const ScheduleKindRow& row : kRows) all.emplace_back(row.name);
    return all;
  }();
  return names;
}

std::string schedule_kind_list(std::string_view separator, std::optional<bool> asynchronous) {
  std::string list;
  for (const ScheduleKindRow& row : kRows)
    if (!asynchronous || row.asynchronous == *asynchronous) list.append(list.empty() ? "" : separator).append(row.name);
  return list;
}

ScheduleKind parse_schedule_kind(std::string_view name, std::string_view source) {
  for (const ScheduleKindRow& row : kRows)
    if (row.name == name) return row.kind;
  LOOM_THROW(source, source.empty() ? "" : ": ", "unknown schedule '", name, "' (known: ", schedule_kind_list(", "),
             ")");
}

bool is_asynchronous(ScheduleKind kind) { return kind != K::custom && schedule_kind_row(kind).asynchronous; }
bool is_multi_chunk(ScheduleKind kind) { return kind != K::custom && schedule_kind_row(kind).placement != P::single; }
bool is_v_shaped(ScheduleKind kind) { return kind != K::custom && schedule_kind_row(kind).placement == P::v; }

int chunks_of(ScheduleKind kind, int requested_chunks) {
  if (!is_multi_chunk(kind)) return 1;
  return is_v_shaped(kind) ? 2 : requested_chunks;
}

std::string schedule_kinds_json() {
  nlohmann::json kinds = nlohmann::json::array();
  for (const ScheduleKindRow& row : kRows)
    kinds.push_back({{"name", row.name}, {"title", row.title}, {"placement", placement_name(row.placement)},
                     {"chunks", row.placement == P::single ? 1 : row.placement == P::v ? 2 : 0},
                     {"asynchronous", row.asynchronous}, {"splits_backward", row.splits_backward},
                     {"summary", row.summary}});
  return kinds.dump(2);
}

Schedule make_schedule(const ScheduleOptions& options) { return make_schedule(parse_schedule_kind(options.kind), options); }

Schedule make_schedule(ScheduleKind kind, const ScheduleOptions& options) {
  LOOM_CHECK(options.stages >= 1, "the number of stages must be at least 1, got ", options.stages);
  LOOM_CHECK(options.microbatches >= 1, "the number of micro-batches must be at least 1, got ", options.microbatches);
  return schedule_kind_row(kind).generate(options);
}

Schedule empty_schedule(ScheduleKind kind, int stages, int microbatches, int chunks) {
  Schedule schedule{std::string(schedule_kind_name(kind)), stages, microbatches, chunks, {}, {}};
  schedule.kind = kind;
  if (is_v_shaped(kind)) schedule.placement = v_placement(stages);
  return schedule;
}

}  // namespace loom::schedule
