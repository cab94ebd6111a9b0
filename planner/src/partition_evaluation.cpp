// A given partition under any synchronous schedule kind (see partition_evaluation.h).
#include <loom/planner/partition_evaluation.h>
#include <loom/planner/recomputation.h>

#include <algorithm>
#include <sstream>

#include <loom/base/error.h>
#include <loom/schedule/generators.h>
#include <loom/schedule/text.h>

namespace loom::planner {

namespace {

// Each stage's recomputed layers: ascending, each in one of its chunks (placed as the kind places
// them: looped c·S + s, or the V).
void check_recompute(const Partition& p, int stages) {
  if (p.recompute.empty()) return;
  LOOM_CHECK(static_cast<int>(p.recompute.size()) == stages, "partition: recomputation for ", p.recompute.size(),
             " stages, but it has ", stages);
  const std::vector<int> placement =
      schedule::is_v_shaped(p.kind) ? schedule::v_placement(stages) : std::vector<int>{};
  for (int s = 0; s < stages; ++s) {
    const std::vector<int>& blocks = p.recompute[static_cast<std::size_t>(s)];
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      LOOM_CHECK(i == 0 || blocks[i] > blocks[i - 1], "partition: stage ", s, " recomputes layer ", blocks[i],
                 " after ", blocks[i - 1], " (ascending, each once)");
      bool held = false;
      for (int c = 0; c < p.chunks; ++c) {
        const int v = placement.empty() ? c * stages + s : placement[static_cast<std::size_t>(c * stages + s)];
        const auto [first, last] = p.layers[static_cast<std::size_t>(v)];
        held = held || (blocks[i] >= first && blocks[i] <= last);
      }
      LOOM_CHECK(held, "partition: stage ", s, " recomputes layer ", blocks[i], ", which it does not hold");
    }
  }
}

// The checks of evaluate_partition() that need no schedule; returns S.
int check_partition(const Profile& profile, const Cluster& cluster, const Partition& p) {
  LOOM_CHECK(!schedule::is_asynchronous(p.kind), "partition: schedule '", schedule::schedule_kind_name(p.kind),
             "' is asynchronous; a partition is evaluated under a synchronous schedule");
  LOOM_CHECK(p.chunks >= 1 && !p.layers.empty() && p.layers.size() % static_cast<std::size_t>(p.chunks) == 0,
             "partition: ", p.layers.size(), " layer ranges are not whole stages of ", p.chunks, " chunks each");
  const int stages = static_cast<int>(p.layers.size()) / p.chunks;
  int next = 0;
  for (std::size_t j = 0; j < p.layers.size(); ++j) {
    const auto [first, last] = p.layers[j];
    LOOM_CHECK(first == next && last >= first, "partition: virtual stage ", j, " holds layers ", first, "-", last,
               ", but it must start at layer ", next, " (the ranges cover the model in order)");
    next = last + 1;
  }
  LOOM_CHECK(next == profile.size(), "partition: the ranges end at layer ", next - 1, ", but the profile has ",
             profile.size(), " layers");
  LOOM_CHECK(p.replicas.empty() || static_cast<int>(p.replicas.size()) == stages, "partition: ", p.replicas.size(),
             " replica counts for ", stages, " pipeline stages");
  int devices = 0;
  for (int r : p.replicas) {
    LOOM_CHECK(r >= 1, "partition: a stage needs at least one replica, got ", r);
    devices += r;
  }
  if (p.replicas.empty()) devices = stages;
  LOOM_CHECK(devices <= cluster.devices(), "partition: ", devices, " devices, but the cluster has ", cluster.devices());
  check_recompute(p, stages);
  LOOM_CHECK(p.microbatches >= 1 && p.global_batch >= p.microbatches && p.global_batch % p.microbatches == 0,
             "partition: ", p.microbatches, " micro-batches do not divide the global batch of ", p.global_batch);
  return stages;
}

struct Placed {
  std::vector<std::vector<int>> devices;  // per pipeline stage
};

Placed place(const Partition& p, int stages, int cluster_devices) {
  Placed placed;
  if (!p.devices.empty()) {
    LOOM_CHECK(static_cast<int>(p.devices.size()) == stages, "partition: devices for ", p.devices.size(),
               " stages, but it has ", stages);
    std::vector<int> seen;
    for (int s = 0; s < stages; ++s) {
      const std::vector<int>& mine = p.devices[static_cast<std::size_t>(s)];
      LOOM_CHECK(p.replicas.empty() ? mine.size() == 1 : static_cast<int>(mine.size()) == p.replicas[static_cast<std::size_t>(s)],
                 "partition: stage ", s, " has ", mine.size(), " devices for its replicas");
      seen.insert(seen.end(), mine.begin(), mine.end());
    }
    std::sort(seen.begin(), seen.end());
    LOOM_CHECK(std::adjacent_find(seen.begin(), seen.end()) == seen.end(), "partition: a device is used twice");
    LOOM_CHECK(seen.front() >= 0 && seen.back() < cluster_devices, "partition: device ", seen.back(),
               " is not one of the cluster's ", cluster_devices);
    placed.devices = p.devices;
    return placed;
  }
  int next = 0;
  for (int s = 0; s < stages; ++s) {
    const int replicas = p.replicas.empty() ? 1 : p.replicas[static_cast<std::size_t>(s)];
    placed.devices.emplace_back();
    for (int r = 0; r < replicas; ++r) placed.devices.back().push_back(next++);
  }
  return placed;
}

// What the ties with both layers on stage s do not hold twice: the copy's value and optimizer state
// (its gradient stays, and with it its place in the gradient buckets).
double shared_tie_bytes(const Profile& profile, const Partition& p, const schedule::Schedule& sched, int s,
                        int replicas, const CostOptions& options) {
  const auto holds = [&](int layer) {
    for (int c = 0; c < sched.chunks; ++c) {
      const auto [first, last] = p.layers[static_cast<std::size_t>(sched.virtual_stage(s, c))];
      if (layer >= first && layer <= last) return true;
    }
    return false;
  };
  double bytes = 0;
  for (const LayerTie& tie : profile.ties)
    if (holds(tie.canonical_layer) && holds(tie.copy_layer))
      bytes += tie.bytes * (1 + options.optimizer_state_factor / (options.zero ? replicas : 1));
  return bytes;
}

// What a chunk holds beyond its kept bytes while its forward, B, BI or BW runs, and from its BI to its BW
// (schedule::StageCost::ChunkMemory's first five), from its layers' working sets. Block j's forward peaks at
// the kept bytes of the chunk's blocks up to j (its input included) plus its forward workspace; its B, after
// the later blocks have freed theirs, at that prefix plus its backward workspace; its BI with nothing freed
// and the later blocks' split holds added; its BW with the later blocks' kept bytes and split holds freed.
schedule::StageCost::ChunkMemory chunk_work(const Profile& profile, int first, int last, int rows) {
  schedule::StageCost::ChunkMemory m;
  double prefix = first > 0 ? profile.cost_at(first - 1, rows).boundary_bytes : 0.0;
  double forward_peak = 0, backward_peak = 0;
  for (int l = first; l <= last; ++l) {
    const LayerCost c = profile.cost_at(l, rows);
    prefix += c.activation_bytes;
    forward_peak = std::max(forward_peak, prefix + c.forward_workspace_bytes);
    backward_peak = std::max(backward_peak, prefix + c.backward_workspace_bytes);
  }
  m.forward_extra = std::max(0.0, forward_peak - prefix);
  m.backward_extra = std::max(0.0, backward_peak - prefix);
  double later_split = 0, freed = 0;  // BI and BW run last layer first
  for (int l = last; l >= first; --l) {
    const LayerCost c = profile.cost_at(l, rows);
    m.input_extra = std::max(m.input_extra, later_split + c.input_workspace_bytes);
    later_split += c.split_held_bytes;
  }
  m.split_held = later_split;
  for (int l = last; l >= first; --l) {
    const LayerCost c = profile.cost_at(l, rows);
    m.weight_extra = std::max(m.weight_extra, c.weight_workspace_bytes - freed);
    freed += c.activation_bytes + c.split_held_bytes;
  }
  return m;
}

// A chunk's working sets with recomputation: its B or BI first runs the recomputed blocks again, then holds
// their activations through the backward; a BI leaves them for its BW (StageRunner: the contexts are cleared
// after BW), so each micro-batch between its BI and its BW holds them.
schedule::StageCost::ChunkMemory with_recomputation(schedule::StageCost::ChunkMemory m, const ChunkRecompute& again) {
  if (again.saved_bytes <= 0) return m;
  m.backward_extra = std::max(again.recompute_peak_bytes, again.saved_bytes + m.backward_extra);
  m.input_extra = std::max(again.recompute_peak_bytes, again.saved_bytes + m.input_extra);
  m.split_held += again.saved_bytes;
  return m;
}

// The BI and BW times of layers first..last (each known, or half the layer's B).
std::pair<double, double> split_backward_ms(const Profile& profile, int first, int last, int rows) {
  double input = 0, weight = 0;
  for (int l = first; l <= last; ++l) {
    const LayerCost c = profile.cost_at(l, rows);
    input += c.input_ms();
    weight += c.weight_ms();
  }
  return {input, weight};
}

// The output gradient chunk c of stage s receives from another stage's chunk, if any.
void gradient_receive(const Profile& profile, const Partition& p, const schedule::Schedule& sched, int s, int c,
                      int rows, schedule::StageCost::ChunkMemory& m) {
  const int v = sched.virtual_stage(s, c);
  const int last = p.layers[static_cast<std::size_t>(v)].second;
  if (v + 1 < sched.virtual_stages() && sched.stage_of(v + 1) != s)
    m.gradient_receive = profile.cost_at(last, rows).boundary_bytes;
}

// The tie groups' allreduce (runtime/tied_parameters.h): where a tie's two layers are on different stages,
// both stages' devices sum the copy's gradient before the step, after their replicas' allreduce; each of the
// two stages waits for it, as for its own allreduce.
void add_tie_allreduce(const Profile& profile, const Cluster& cluster, const Partition& p,
                       const schedule::Schedule& sched, const Placed& placed, schedule::CostModel& costs) {
  const auto stage_of = [&](int layer) {
    for (int v = 0; v < sched.virtual_stages(); ++v)
      if (layer >= p.layers[static_cast<std::size_t>(v)].first && layer <= p.layers[static_cast<std::size_t>(v)].second)
        return sched.stage_of(v);
    return -1;
  };
  for (const LayerTie& tie : profile.ties) {
    const int a = stage_of(tie.canonical_layer), b = stage_of(tie.copy_layer);
    if (a == b || a < 0 || b < 0) continue;
    std::vector<int> group = placed.devices[static_cast<std::size_t>(a)];
    group.insert(group.end(), placed.devices[static_cast<std::size_t>(b)].begin(),
                 placed.devices[static_cast<std::size_t>(b)].end());
    const double ms = allreduce_cost(cluster, group).at(tie.bytes);
    costs.stages[static_cast<std::size_t>(a)].allreduce_ms += ms;
    costs.stages[static_cast<std::size_t>(b)].allreduce_ms += ms;
  }
}

}  // namespace

schedule::StageCost stage_costs(const Profile& profile, const Cluster& cluster, const Partition& p,
                                const schedule::Schedule& sched, const std::vector<int>& devices, int s,
                                const CostOptions& requested, StageStaticBytes& bytes) {
  CostOptions options = requested;
  options.zero = requested.zero || p.zero;  // either turns ZeRO-1 on
  options.overlap_allreduce = requested.overlap_allreduce || p.overlap_allreduce;
  const int b = p.global_batch / p.microbatches;
  const int rows = ceil_div(b, static_cast<int>(devices.size()));
  const double data_share = rows / profile.microbatch;  // the profile's data costs are per micro-batch
  const LinearCost ar = allreduce_cost(cluster, devices);
  schedule::StageCost cost;
  const int replicas = static_cast<int>(devices.size());
  const bool sharded = options.zero && replicas > 1;
  bytes = {};
  std::vector<double> chunk_weights;
  const std::vector<int> none;
  const std::vector<int>& recompute = p.recompute.empty() ? none : p.recompute[static_cast<std::size_t>(s)];
  for (int c = 0; c < sched.chunks; ++c) {
    const auto [first, last] = p.layers[static_cast<std::size_t>(sched.virtual_stage(s, c))];
    const RangeCost work = range_cost(profile, first, last, rows);
    const ChunkRecompute again = chunk_recompute(profile, first, last, rows, recompute);
    const double weights = profile.parameter_bytes(first, last);
    const bool reads_inputs = first == 0, reads_targets = last + 1 == profile.size();
    chunk_weights.push_back(weights);
    bytes.held += state_bytes(weights, replicas, options) +
                  (sharded ? 0.0 : communicator_scratch_bytes(cluster, devices, weights));
    cost.allreduce_ms += bucketed_allreduce_ms(profile, first, last, rows, ar, options.overlap_allreduce);
    cost.step_ms += weights / 1e6 * options.step_ms_per_mb / (sharded ? replicas : 1);
    const double forward_ms = work.forward_ms + (reads_inputs ? profile.data_ms * data_share : 0.0);
    cost.forward_ms += forward_ms;
    cost.backward_ms += work.backward_ms + again.forward_ms;
    cost.chunk_forward_ms.push_back(forward_ms);
    cost.chunk_backward_ms.push_back(work.backward_ms + again.forward_ms);
    const auto [input_ms, weight_ms] = split_backward_ms(profile, first, last, rows);
    cost.chunk_backward_input_ms.push_back(input_ms + again.forward_ms);  // BI recomputes what it needs
    cost.chunk_backward_weight_ms.push_back(weight_ms);
    cost.chunk_activation_bytes.push_back(work.kept_bytes - again.saved_bytes + again.input_bytes +
                                          (reads_inputs ? profile.input_bytes * data_share : 0.0) +
                                          (reads_targets ? profile.target_bytes * data_share : 0.0));
    cost.chunk_boundary_bytes.push_back(last + 1 < profile.size() ? profile.cost_at(last, b).boundary_bytes : 0.0);
    cost.chunk_memory.push_back(with_recomputation(chunk_work(profile, first, last, rows), again));
    gradient_receive(profile, p, sched, s, c, rows, cost.chunk_memory.back());
  }
  bytes.held -= shared_tie_bytes(profile, p, sched, s, replicas, options);
  if (sharded) {
    bytes.held += zero_scratch_bytes(chunk_weights, replicas);
    double stage_weights = 0;
    for (double w : chunk_weights) stage_weights += w;
    bytes.after_step = zero_gather_bytes(stage_weights);
  }
  return cost;
}

PartitionEvaluation evaluate_partition(const Profile& profile, const Cluster& cluster, const Partition& p,
                                       const CostOptions& options, const schedule::Schedule* made) {
  const int stages = check_partition(profile, cluster, p);
  PartitionEvaluation out;
  if (made != nullptr && made->stages == stages && made->microbatches == p.microbatches && made->chunks == p.chunks &&
      made->name == schedule::schedule_kind_name(p.kind))
    out.schedule = *made;
  else
    out.schedule = schedule::make_schedule(
        p.kind, schedule::ScheduleOptions{std::string(schedule::schedule_kind_name(p.kind)), stages, p.microbatches,
                                          p.chunks, 3, {}});
  LOOM_CHECK(out.schedule.chunks == p.chunks, "partition: schedule '", schedule::schedule_kind_name(p.kind),
             "' holds ", out.schedule.chunks, " chunk(s) per stage, but the partition has ", p.chunks);
  const Placed placed = place(p, stages, cluster.devices());
  schedule::CostModel costs;
  out.stages.resize(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    StageEvaluation& stage = out.stages[static_cast<std::size_t>(s)];
    stage.devices = placed.devices[static_cast<std::size_t>(s)];
    StageStaticBytes bytes;
    costs.stages.push_back(stage_costs(profile, cluster, p, out.schedule, stage.devices, s, options, bytes));
    stage.static_bytes = bytes.held;
    stage.after_step_bytes = bytes.after_step;
  }
  add_tie_allreduce(profile, cluster, p, out.schedule, placed, costs);
  for (int s = 0; stages > 1 && s < stages; ++s) {  // after stage s; the last one is the looped wrap
    const LinearCost link = transfer_cost(cluster, placed.devices[static_cast<std::size_t>(s)],
                                          placed.devices[static_cast<std::size_t>((s + 1) % stages)],
                                          p.global_batch / p.microbatches);
    schedule::Link l;
    if (link.ms_per_byte > 0) l.bandwidth_bytes_per_s = 1e3 / link.ms_per_byte;
    l.latency_ms = link.latency_ms;
    costs.links.push_back(l);
  }
  out.simulation = schedule::simulate(out.schedule, costs);
  for (int s = 0; s < stages; ++s) {
    StageEvaluation& stage = out.stages[static_cast<std::size_t>(s)];
    stage.activation_bytes = out.simulation.stages[static_cast<std::size_t>(s)].peak_activation_bytes;
    stage.peak_bytes = StageStaticBytes{stage.static_bytes, stage.after_step_bytes}.peak(stage.activation_bytes);
    out.peak_bytes = std::max(out.peak_bytes, stage.peak_bytes);
    if (stage.peak_bytes > cluster.device_memory && out.fits) {
      out.fits = false;
      out.why_not = loom::detail::concat("stage ", s, " needs ", stage.peak_bytes, " bytes per device, ",
                                         stage.peak_bytes - cluster.device_memory, " more than the ",
                                         cluster.device_memory, " available");
    }
  }
  return out;
}

std::vector<std::pair<int, int>> parse_layer_ranges(const std::string& text, const std::string& source) {
  std::vector<std::pair<int, int>> ranges;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int first = -1, last = -1;
    char dash = 0;
    std::istringstream one(item);
    const bool ok = static_cast<bool>(one >> first >> dash >> last) && dash == '-' && one.peek() == EOF &&
                    first >= 0 && last >= first && last < kMaxProfileLayers;
    LOOM_CHECK(ok, source, ": '", schedule::excerpt(item), "' is not a layer range FIRST-LAST (0 <= FIRST <= LAST)");
    ranges.emplace_back(first, last);
  }
  LOOM_CHECK(!ranges.empty(), source, ": no layer ranges (expected e.g. 0-3,4-7)");
  return ranges;
}

}  // namespace loom::planner
