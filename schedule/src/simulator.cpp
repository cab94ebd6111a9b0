// Discrete-event simulation of a schedule under the executor's semantics (simulator.h). Each stage
// keeps its own clock and runs as far as it can; a receive whose message has not been sent yet
// parks the stage until another stage sends it. Every directed link carries one sender's messages
// in that sender's program order, so a per-link "free at" time models contention exactly.
#include <loom/schedule/simulator.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <loom/schedule/overlap.h>
#include <loom/schedule/validator.h>

#include <loom/base/error.h>
#include "messages.h"

namespace loom::schedule {

const StageCost& CostModel::stage(int s) const {
  LOOM_CHECK(!stages.empty(), "cost model: no stage costs given");
  if (stages.size() == 1) return stages.front();
  LOOM_CHECK(s >= 0 && s < static_cast<int>(stages.size()), "cost model: no costs for stage ", s, " (have ",
                  stages.size(), ")");
  return stages[s];
}

Link CostModel::link(int from_stage) const {
  if (links.empty()) return Link{};
  if (links.size() == 1) return links.front();
  LOOM_CHECK(from_stage >= 0 && from_stage < static_cast<int>(links.size()), "cost model: no link after stage ",
                  from_stage, " (have ", links.size(), ")");
  return links[from_stage];
}

CostModel uniform_costs(double forward_ms, double backward_ms) {
  CostModel costs;
  StageCost stage;
  stage.forward_ms = forward_ms;
  stage.backward_ms = backward_ms;
  costs.stages.push_back(stage);
  return costs;
}

namespace {

double duration_ms(const Action& action, const StageCost& cost, int chunks) {
  if (cost.per_chunk() && is_compute(action.op)) {
    const auto c = static_cast<std::size_t>(action.chunk);
    if (action.op == Op::Forward) return cost.chunk_forward_ms.at(c);
    if (action.op == Op::Backward) return cost.chunk_backward_ms.at(c);
    if (!cost.chunk_backward_input_ms.empty())
      return action.op == Op::BackwardInput ? cost.chunk_backward_input_ms.at(c) : cost.chunk_backward_weight_ms.at(c);
    return cost.chunk_backward_ms.at(c) / 2;
  }
  const double half = cost.backward_ms / 2;
  switch (action.op) {
    case Op::Forward: return cost.forward_ms / chunks;
    case Op::Backward: return cost.backward_ms / chunks;
    case Op::BackwardInput: return (cost.backward_input_ms >= 0 ? cost.backward_input_ms : half) / chunks;
    case Op::BackwardWeight: return (cost.backward_weight_ms >= 0 ? cost.backward_weight_ms : half) / chunks;
    case Op::AllReduce: return cost.allreduce_ms;
    case Op::Step: return cost.step_ms;
    default: return 0;
  }
}

// Steady-state spacing of stage 0's backward ends over the middle half of the window.
double steady_ms_per_microbatch(const std::vector<TimedAction>& timeline, int microbatches) {
  std::vector<double> ends;
  for (const TimedAction& t : timeline)
    if (t.stage == 0 && ends_backward(t.action.op)) ends.push_back(t.end_ms);
  std::sort(ends.begin(), ends.end());
  const int n = static_cast<int>(ends.size());
  const int lo = n / 4, hi = n - 1 - n / 4;
  if (hi <= lo || n < microbatches) return 0;
  return (ends[hi] - ends[lo]) / (hi - lo);
}

}  // namespace

namespace {

constexpr double kNotSent = -std::numeric_limits<double>::infinity();  // no message lands then

// The state of one simulation: clocks, messages in flight, links. Flat arrays, not maps: the
// planners simulate thousands of candidates a second, and the maps' lookups were a third of it.
struct Simulation {
  Simulation(const Schedule& schedule, const CostModel& costs, SimulationResult& result)
      : schedule(schedule),
        costs(costs),
        result(result),
        clock(static_cast<std::size_t>(schedule.stages), 0.0),
        arrival(2 * static_cast<std::size_t>(std::max(schedule.microbatches, 0)) *
                    static_cast<std::size_t>(std::max(schedule.virtual_stages(), 0)),
                kNotSent),
        link_free(static_cast<std::size_t>(schedule.stages) * static_cast<std::size_t>(schedule.stages), 0.0),
        holder(detail::holders(schedule)) {}

  const Schedule& schedule;
  const CostModel& costs;
  SimulationResult& result;
  std::vector<double> clock;
  std::vector<double> arrival;    // per message (slot()): when it lands, kNotSent before its send
  std::vector<double> link_free;  // per (from stage, to stage): free at
  std::vector<int> holder;        // virtual stage -> its stage

  // The message's place in `arrival`; a micro-batch or chunk out of range is the schedule's error.
  std::size_t slot(const detail::MessageKey& key, int stage, const Action& a) const {
    if (key.microbatch < 0 || key.microbatch >= schedule.microbatches || key.to_virtual_stage < 0 ||
        key.to_virtual_stage >= schedule.virtual_stages()) {
      check(schedule);  // says which action is wrong
      LOOM_THROW("simulate: schedule '", schedule.name, "' has ", to_string(a, schedule.chunks > 1), " on stage ",
                 stage, ", outside its ", schedule.microbatches, " micro-batches and ", schedule.chunks, " chunk(s)");
    }
    const auto v = static_cast<std::size_t>(schedule.virtual_stages());
    return ((key.gradient ? 1 : 0) * static_cast<std::size_t>(schedule.microbatches) +
            static_cast<std::size_t>(key.microbatch)) * v + static_cast<std::size_t>(key.to_virtual_stage);
  }
  // When the message a receive waits for lands, or kNotSent.
  double arrival_of(int s, const Action& receive) const {
    return arrival[slot(detail::received_message(schedule, s, receive), s, receive)];
  }

  // A send of stage s at time `at`: the transfer starts when its link is free.
  void send(int s, const Action& a, double at) {
    const detail::MessageKey key = detail::sent_message(schedule, s, a);
    if (key.to_virtual_stage < 0 || key.to_virtual_stage >= schedule.virtual_stages()) {
      check(schedule);  // an SA of the last or SG of the first virtual stage: says so
      LOOM_THROW("simulate: schedule '", schedule.name, "' sends ", to_string(a, schedule.chunks > 1), " from stage ", s,
                 " past the end of the pipeline");
    }
    const int to = holder[static_cast<std::size_t>(key.to_virtual_stage)];
    Transfer transfer{s, to, a, at, at};
    if (to != s) {  // else a local hand-over between two chunks of s: no time, no link
      // An activation and its gradient have the size of the producing stage's output and share one
      // link (in opposite directions): the link after the producer, except on the way back up a V
      // (producer p → p − 1), which uses the link between p − 1 and p.
      const int producer = a.op == Op::SendActivation ? s : to;
      const int consumer = a.op == Op::SendActivation ? to : s;
      const bool up = !schedule.placement.empty() && consumer == producer - 1;
      const Link link = costs.link(up ? consumer : producer);
      const double bytes = boundary_bytes(key);
      double& free_at = link_free[static_cast<std::size_t>(s) * static_cast<std::size_t>(schedule.stages) +
                                  static_cast<std::size_t>(to)];
      transfer.start_ms = std::max(at, free_at);
      const double wire_ms = std::isinf(link.bandwidth_bytes_per_s) ? 0 : bytes / link.bandwidth_bytes_per_s * 1e3;
      free_at = transfer.start_ms + wire_ms;
      transfer.arrival_ms = free_at + link.latency_ms;
    }
    arrival[slot(key, s, a)] = transfer.arrival_ms;
    result.transfers.push_back(transfer);
  }

  // The bytes of the message `key`: the output of the virtual stage that produced it (the sender of
  // an activation, the receiver of a gradient), its chunk's when the costs are per chunk.
  double boundary_bytes(const detail::MessageKey& key) const {
    const int produced_by = key.gradient ? key.to_virtual_stage : key.to_virtual_stage - 1;
    const StageCost& cost = costs.stage(holder[static_cast<std::size_t>(produced_by)]);
    return cost.per_chunk() ? cost.chunk_boundary_bytes.at(static_cast<std::size_t>(schedule.chunk_of(produced_by)))
                            : cost.boundary_bytes;
  }

  void compute(int s, std::size_t index, double start, double end) {
    result.timeline.push_back({s, static_cast<int>(index), schedule.programs[s][index], start, end});
    result.stages[s].busy_ms += end - start;
    result.stages[s].compute_ms += end - start;
  }

  // An overlapped pair's group (overlap.h), once both halves' messages are known; false if not yet.
  // The forward runs first when its input is there no later than the backward's; else the backward
  // starts and the forward takes over when its input lands (the executor switches between blocks),
  // the backward finishing after it. Each half's send leaves when that half ends.
  bool overlap_group(int s, const OverlapGroup& g) {
    const auto& program = schedule.programs[s];
    double ready[2] = {clock[s], clock[s]};
    const std::optional<std::size_t> receives[2] = {g.forward_receive, g.backward_receive};
    for (int h = 0; h < 2; ++h) {
      if (!receives[h]) continue;
      const double lands = arrival_of(s, program[*receives[h]]);
      if (lands == kNotSent) return false;
      ready[h] = std::max(clock[s], lands);
      result.timeline.push_back({s, static_cast<int>(*receives[h]), program[*receives[h]], clock[s], ready[h]});
    }
    const StageCost& cost = costs.stage(s);
    const double df = duration_ms(program[g.forward], cost, schedule.chunks);
    const double db = duration_ms(program[g.forward + 1], cost, schedule.chunks);
    double forward_end = 0, backward_end = 0;
    if (ready[0] <= ready[1] || ready[1] + db <= ready[0]) {  // one half, then the other
      const bool forward_first = ready[0] <= ready[1];
      const double first_end = (forward_first ? ready[0] : ready[1]) + (forward_first ? df : db);
      const double second_start = std::max(first_end, forward_first ? ready[1] : ready[0]);
      forward_end = forward_first ? first_end : second_start + df;
      backward_end = forward_first ? second_start + db : first_end;
      compute(s, g.forward, forward_end - df, forward_end);
      compute(s, g.forward + 1, backward_end - db, backward_end);
    } else {  // the backward from ready[1], paused while the forward runs from ready[0]
      forward_end = ready[0] + df;
      backward_end = forward_end + db - (ready[0] - ready[1]);
      compute(s, g.forward + 1, ready[1], ready[0]);
      compute(s, g.forward, ready[0], forward_end);
      compute(s, g.forward + 1, forward_end, backward_end);
    }
    const std::optional<std::size_t> sends[2] = {g.forward_send, g.backward_send};
    const double ends[2] = {forward_end, backward_end};
    const int order[2] = {forward_end <= backward_end ? 0 : 1, forward_end <= backward_end ? 1 : 0};
    for (int h : order)
      if (sends[h]) {
        send(s, program[*sends[h]], ends[h]);
        result.timeline.push_back({s, static_cast<int>(*sends[h]), program[*sends[h]], ends[h], ends[h]});
      }
    clock[s] = std::max(forward_end, backward_end);
    return true;
  }

  // Runs stage s as far as it can; returns the actions done.
  std::size_t advance(int s, std::size_t& next, const std::map<std::size_t, OverlapGroup>& groups) {
    const auto& program = schedule.programs[s];
    const StageCost& cost = costs.stage(s);
    std::size_t done = 0;
    while (next < program.size()) {
      if (auto group = groups.find(next); group != groups.end()) {
        if (!overlap_group(s, group->second)) break;
        done += group->second.end - next;
        next = group->second.end;
        continue;
      }
      const Action& a = program[next];
      TimedAction timed{s, static_cast<int>(next), a, clock[s], clock[s]};
      if (is_receive(a.op)) {
        const double lands = arrival_of(s, a);
        if (lands == kNotSent) break;  // its sender has not got there yet
        timed.end_ms = std::max(clock[s], lands);
      } else if (is_send(a.op)) {
        send(s, a, clock[s]);
      } else {
        const double d = duration_ms(a, cost, schedule.chunks);
        timed.end_ms = clock[s] + d;
        result.stages[s].busy_ms += d;
        if (is_compute(a.op)) result.stages[s].compute_ms += d;
      }
      clock[s] = timed.end_ms;
      result.timeline.push_back(timed);
      ++next;
      ++done;
    }
    return done;
  }
};

// Checks the schedule's shape and the cost model against it.
void check_inputs(const Schedule& schedule, const CostModel& costs) {
  const int stages = schedule.stages;
  LOOM_CHECK(stages >= 1 && static_cast<int>(schedule.programs.size()) == stages,
                  "simulate: the schedule has ", schedule.programs.size(), " programs for ", stages, " stages");
  check_size(stages, schedule.microbatches, schedule.chunks, "simulate");  // bounds its time and memory
  check_placement(schedule, "simulate");
  LOOM_CHECK(costs.stages.size() == 1 || static_cast<int>(costs.stages.size()) == stages, "cost model has ",
                  costs.stages.size(), " stage costs for a ", stages, "-stage schedule");
  LOOM_CHECK(costs.links.size() <= 1 || static_cast<int>(costs.links.size()) >= stages - 1, "cost model has ",
                  costs.links.size(), " links for a ", stages, "-stage schedule (need 1, or one after each stage)");
  for (int s = 0; s < stages; ++s) {
    const StageCost& c = costs.stage(s);
    LOOM_CHECK(c.forward_ms >= 0 && c.backward_ms >= 0 && c.allreduce_ms >= 0 && c.step_ms >= 0 &&
                        c.activation_bytes >= 0 && c.forward_transient_bytes >= 0 && c.boundary_bytes >= 0,
                    "cost model: negative cost for stage ", s);
    if (!c.per_chunk() && c.chunk_backward_ms.empty() && c.chunk_activation_bytes.empty() && c.chunk_boundary_bytes.empty())
      continue;
    for (const std::vector<double>* v : {&c.chunk_forward_ms, &c.chunk_backward_ms, &c.chunk_activation_bytes,
                                         &c.chunk_boundary_bytes}) {
      LOOM_CHECK(static_cast<int>(v->size()) == schedule.chunks, "cost model: stage ", s, " has per-chunk costs for ",
                 v->size(), " chunks, but the schedule has ", schedule.chunks, " (give all four per-chunk lists, one "
                 "entry per chunk)");
      for (double x : *v) LOOM_CHECK(x >= 0, "cost model: negative per-chunk cost for stage ", s);
    }
    for (const std::vector<double>* v : {&c.chunk_backward_input_ms, &c.chunk_backward_weight_ms})
      LOOM_CHECK(v->empty() || static_cast<int>(v->size()) == schedule.chunks, "cost model: stage ", s,
                 " has per-chunk BI/BW times for ", v->size(), " chunks, but the schedule has ", schedule.chunks);
    LOOM_CHECK(c.chunk_backward_input_ms.size() == c.chunk_backward_weight_ms.size(), "cost model: stage ", s,
               " has per-chunk BI times without BW times or the other way round");
    LOOM_CHECK(c.chunk_memory.empty() || static_cast<int>(c.chunk_memory.size()) == schedule.chunks,
               "cost model: stage ", s, " has per-chunk memory for ", c.chunk_memory.size(),
               " chunks, but the schedule has ", schedule.chunks);
  }
}

// The most bytes the in-flight (micro-batch, chunk) pairs of `program` hold at once, each chunk keeping
// `chunk_bytes[chunk]` per micro-batch (stage_memory()'s count, weighted), and with `extra` (one per chunk,
// or empty) what else the stage holds around them (StageCost::ChunkMemory): what a BI leaves for its BW, and
// each action's own peak while it runs (a B or BI with the output gradient it received). In program order, so
// it depends neither on timing nor on other stages.
double peak_chunk_bytes(const std::vector<Action>& program, const std::vector<double>& chunk_bytes,
                        const std::vector<StageCost::ChunkMemory>& extra) {
  static const StageCost::ChunkMemory kNone;
  std::map<std::pair<int, int>, double> inflight;
  double held = 0, peak = 0;
  for (const Action& a : program) {
    const StageCost::ChunkMemory& m = extra.empty() ? kNone : extra.at(static_cast<std::size_t>(a.chunk));
    if (a.op == Op::Forward) {
      const double bytes = chunk_bytes.at(static_cast<std::size_t>(a.chunk));
      inflight[{a.microbatch, a.chunk}] = bytes;
      held += bytes;
      peak = std::max(peak, held + m.forward_extra);
    }
    if (a.op == Op::Backward) peak = std::max(peak, held + m.gradient_receive + m.backward_extra);
    if (a.op == Op::BackwardInput) peak = std::max(peak, held + m.gradient_receive + m.input_extra);
    if (a.op == Op::BackwardWeight) peak = std::max(peak, held + m.weight_extra);
    if (a.op == Op::BackwardInput) held += m.split_held;
    if (a.op == Op::BackwardWeight) held -= m.split_held;
    if (ends_backward(a.op))
      if (auto it = inflight.find({a.microbatch, a.chunk}); it != inflight.end()) {
        held -= it->second;
        inflight.erase(it);
      }
    peak = std::max(peak, held);
  }
  return peak;
}

// stage_peak_activation_bytes with the program's stage_memory() already counted.
double peak_activation_bytes(const Schedule& schedule, int s, const StageCost& cost, const StageMemory& memory) {
  const auto& program = schedule.programs.at(static_cast<std::size_t>(s));
  return (cost.per_chunk() ? peak_chunk_bytes(program, cost.chunk_activation_bytes, cost.chunk_memory)
                           : static_cast<double>(memory.peak_inflight) / schedule.chunks * cost.activation_bytes) +
         (memory.peak_inflight > 0 ? cost.forward_transient_bytes : 0);
}

}  // namespace

double stage_peak_activation_bytes(const Schedule& schedule, int s, const StageCost& cost) {
  return peak_activation_bytes(schedule, s, cost, stage_memory(schedule.programs.at(static_cast<std::size_t>(s))));
}

SimulationResult simulate(const Schedule& schedule, const CostModel& costs) {
  check_inputs(schedule, costs);
  const int stages = schedule.stages;
  SimulationResult result;
  result.stages.resize(stages);
  Simulation sim(schedule, costs, result);
  std::size_t actions = 0;
  for (const auto& program : schedule.programs) actions += program.size();
  result.timeline.reserve(actions);
  std::vector<std::map<std::size_t, OverlapGroup>> groups(stages);  // per stage, by the group's begin
  for (int s = 0; s < stages; ++s)
    for (const OverlapGroup& g : overlap_groups(schedule.programs[s])) groups[s][g.begin] = g;
  std::vector<std::size_t> next(stages, 0);
  std::size_t remaining = actions;
  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      const std::size_t done = sim.advance(s, next[s], groups[s]);
      remaining -= done;
      progress = progress || done > 0;
    }
  }
  std::vector<double>& clock = sim.clock;
  if (remaining > 0) {
    check(schedule);  // says why it is stuck
    LOOM_THROW("simulate: schedule '", schedule.name, "' cannot finish");
  }

  double start = 0, end = 0;
  for (int s = 0; s < stages; ++s) end = std::max(end, clock[s]);
  result.step_ms = end - start;
  double busy = 0;
  for (int s = 0; s < stages; ++s) {
    StageStats& stats = result.stages[s];
    stats.end_ms = clock[s];
    stats.idle_ms = result.step_ms - stats.busy_ms;
    busy += stats.busy_ms;
    const StageMemory memory = stage_memory(schedule.programs[s]);
    stats.peak_inflight = memory.peak_inflight;
    stats.peak_weight_versions = memory.peak_weight_versions;
    stats.peak_activation_units = static_cast<double>(memory.peak_inflight) / schedule.chunks;
    stats.peak_activation_bytes = peak_activation_bytes(schedule, s, costs.stage(s), memory);
  }
  result.bubble_fraction = result.step_ms > 0 ? 1.0 - busy / (stages * result.step_ms) : 0.0;
  result.ms_per_microbatch = schedule.microbatches > 0 ? result.step_ms / schedule.microbatches : 0;
  if (schedule.asynchronous()) {
    const double steady = steady_ms_per_microbatch(result.timeline, schedule.microbatches);
    if (steady > 0) result.ms_per_microbatch = steady;
  }
  return result;
}

}  // namespace loom::schedule
