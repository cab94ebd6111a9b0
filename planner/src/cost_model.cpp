// The latency and memory of one synchronous step of a plan (formulas in cost_model.h).
#include <loom/planner/cost_model.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <loom/base/error.h>

namespace loom::planner {

namespace {

constexpr double kMsPerSecond = 1e3;

}  // namespace

int ceil_div(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b - 1) / b); }

LinearCost allreduce_cost(const Cluster& cluster, const std::vector<int>& devices) {
  if (devices.size() <= 1) return {};
  std::map<int, int> per_node;
  for (int d : devices) ++per_node[cluster.node_of(d)];
  int most = 0;
  for (const auto& [node, count] : per_node) most = std::max(most, count);
  const double n = most, g = static_cast<double>(per_node.size());
  LinearCost cost;
  cost.ms_per_byte = 2 * (n - 1) / n / cluster.intra_bandwidth * kMsPerSecond;
  cost.latency_ms = 2 * (n - 1) * cluster.intra_latency_ms;
  if (g > 1) {
    cost.ms_per_byte += 2 * (g - 1) / g / cluster.inter_bandwidth * kMsPerSecond;
    cost.latency_ms += 2 * (g - 1) * cluster.inter_latency_ms;
  }
  return cost;
}

double allreduce_ms(const Cluster& cluster, const std::vector<int>& devices, double bytes) {
  return allreduce_cost(cluster, devices).at(bytes);
}

LinearCost transfer_cost(const Cluster& cluster, const std::vector<int>& from, const std::vector<int>& to, int rows) {
  const long senders = static_cast<long>(from.size()), receivers = static_cast<long>(to.size());
  std::map<int, double> device_out, device_in, node_out, node_in;
  bool intra = false, inter = false;
  for (long i = 0; i < senders; ++i) {
    const long s_begin = i * rows / senders, s_end = (i + 1) * rows / senders;
    for (long j = 0; j < receivers; ++j) {
      const long r_begin = j * rows / receivers, r_end = (j + 1) * rows / receivers;
      const long overlap = std::min(s_end, r_end) - std::max(s_begin, r_begin);
      if (overlap <= 0) continue;
      const int a = from[i], b = to[j];
      if (cluster.node_of(a) == cluster.node_of(b)) {
        device_out[a] += overlap;
        device_in[b] += overlap;
        intra = true;
      } else {
        node_out[cluster.node_of(a)] += overlap;
        node_in[cluster.node_of(b)] += overlap;
        inter = true;
      }
    }
  }
  auto busiest = [](const std::map<int, double>& a, const std::map<int, double>& b) {
    double most = 0;
    for (const auto& [k, v] : a) most = std::max(most, v);
    for (const auto& [k, v] : b) most = std::max(most, v);
    return most;
  };
  LinearCost cost;
  const double per_row = 1.0 / rows;  // fraction of the micro-batch's bytes in one row
  cost.ms_per_byte = std::max(busiest(device_out, device_in) * per_row / cluster.intra_bandwidth,
                              busiest(node_out, node_in) * per_row / cluster.inter_bandwidth) *
                     kMsPerSecond;
  cost.latency_ms = inter ? cluster.inter_latency_ms : intra ? cluster.intra_latency_ms : 0;
  return cost;
}

double transfer_ms(const Cluster& cluster, const std::vector<int>& from, const std::vector<int>& to, int rows,
                   double bytes) {
  return transfer_cost(cluster, from, to, rows).at(bytes);
}

PipelineLatency dapple_latency(const std::vector<Element>& elements, int microbatches) {
  PipelineLatency out;
  const int count = static_cast<int>(elements.size()), stages = (count + 1) / 2;
  const double m = microbatches;
  std::vector<double> before(count + 1, 0.0), before_backward(count + 1, 0.0);
  for (int e = 0; e < count; ++e) {
    before[e + 1] = before[e] + elements[e].forward_ms + elements[e].backward_ms;
    before_backward[e + 1] = before_backward[e] + elements[e].backward_ms;
  }
  double worst = -1, tail = -INFINITY;
  for (int e = 0; e < count; ++e) {
    const Element& el = elements[e];
    const double bound = before[e] + m * (el.forward_ms + el.backward_ms);
    if (bound >= worst) {
      worst = bound;
      out.pivot = e;
      out.pivot_is_round_trip = false;
    }
    if (e % 2 == 0) {
      const int in_flight = std::min(stages - e / 2, microbatches);
      if (in_flight < microbatches) {
        const double round_trip = before[count] - before[e];
        const double loop = before[e] + round_trip * (1 + (m - 1) / in_flight);
        if (loop > worst || (loop == worst && out.pivot < e)) {
          worst = loop;
          out.pivot = e;
          out.pivot_is_round_trip = true;
        }
      }
    }
    out.allreduce_tail_ms.push_back(el.allreduce_ms - before_backward[e]);
    tail = std::max(tail, out.allreduce_tail_ms.back());
  }
  out.step_ms = worst + tail;
  const int q = out.pivot;
  if (out.pivot_is_round_trip) {
    for (const Element& el : elements) out.warmup_ms += el.forward_ms;
    const int in_flight = std::min(stages - q / 2, microbatches);
    out.steady_ms = (m - 1) * (before[count] - before[q]) / in_flight;
  } else {
    for (int e = 0; e <= q; ++e) out.warmup_ms += elements[e].forward_ms;
    out.steady_ms = (m - 1) * (elements[q].forward_ms + elements[q].backward_ms);
  }
  out.end_ms = out.step_ms - out.warmup_ms - out.steady_ms;
  return out;
}

PipelineLatency gpipe_latency(const std::vector<Element>& elements, int microbatches) {
  PipelineLatency out;
  out.pivot = -1;
  double sum_f = 0, sum_b = 0, max_f = 0, max_b = 0, before_backward = 0, tail = -INFINITY;
  for (const Element& el : elements) {
    sum_f += el.forward_ms;
    sum_b += el.backward_ms;
    max_f = std::max(max_f, el.forward_ms);
    max_b = std::max(max_b, el.backward_ms);
    out.allreduce_tail_ms.push_back(el.allreduce_ms - before_backward);
    tail = std::max(tail, out.allreduce_tail_ms.back());
    before_backward += el.backward_ms;
  }
  out.warmup_ms = sum_f + (microbatches - 1) * max_f;
  out.steady_ms = sum_b + (microbatches - 1) * max_b;
  out.end_ms = tail;
  out.step_ms = out.warmup_ms + out.steady_ms + out.end_ms;
  return out;
}

double state_bytes(double weight_bytes, int replicas, const CostOptions& options) {
  const double buckets = replicas > 1 ? weight_bytes : 0;
  return weight_bytes * (2 + options.optimizer_state_factor / (options.zero ? replicas : 1)) + buckets;
}

namespace {

// The receive slots a reduce-scatter step keeps for `part` bytes (comm/mpi_ring.cpp: min(4, ⌈part / 1 MiB⌉)
// segments of 1 MiB, kept by the communicator for reuse).
double receive_window(double part) {
  constexpr double kSegment = 1 << 20;
  return part > 0 ? std::min(4.0, std::ceil(part / kSegment)) * kSegment : 0.0;
}

}  // namespace

double zero_scratch_bytes(const std::vector<double>& chunk_weight_bytes, int replicas) {
  if (replicas < 2) return 0;
  double total = 0;
  for (double w : chunk_weight_bytes) total += w;
  const auto owner = [&](int r) { return std::pair{total * r / replicas, total * (r + 1) / replicas}; };
  double most = 0;
  for (int r = 0; r < replicas; ++r) {
    double kept = 0, begin = 0;
    for (double w : chunk_weight_bytes) {
      double part = 0;  // of the whole chunk: no less than of any of its buckets
      for (int k = 0; k + 1 < replicas; ++k) {
        const auto [a, b] = owner(((r - k - 2) % replicas + replicas) % replicas);
        part = std::max(part, std::min(b, begin + w) - std::max(a, begin));
      }
      kept += receive_window(part);
      begin += w;
    }
    most = std::max(most, kept);
  }
  return most;
}

double zero_gather_bytes(double stage_weight_bytes) {
  constexpr double kWindowBytes = double{1 << 22} * 4;  // ZeroShard's window of f32 parameters
  return std::min(stage_weight_bytes, kWindowBytes);
}

double communicator_scratch_bytes(const Cluster& cluster, const std::vector<int>& devices, double weight_bytes) {
  if (devices.size() < 2 || weight_bytes <= 0) return 0;
  const auto window = [&](double bucket, int group) {
    if (group < 2) return 0.0;
    return receive_window((group & (group - 1)) == 0 ? bucket / 2 : bucket / group);
  };
  std::vector<int> nodes;
  int local = 0;
  for (int d : devices) {
    if (std::find(nodes.begin(), nodes.end(), cluster.node_of(d)) == nodes.end()) nodes.push_back(cluster.node_of(d));
    local += cluster.node_of(d) == cluster.node_of(devices.front()) ? 1 : 0;
  }
  const double bucket = std::min(weight_bytes, kGradientBucketBytes);
  return window(bucket, local) + window(bucket / local, static_cast<int>(nodes.size()));
}

void BucketedAllreduce::add_layer(double bytes, double backward_ms) {
  if (bytes > 0 && bucket_ > 0 && bucket_ + bytes > kGradientBucketBytes) {  // the open bucket is full
    const double ms = ar_.at(bucket_);
    done_ = std::max(done_, ready_) + ms;
    closed_ms_ += ms;
    bucket_ = 0;
  }
  bucket_ += bytes;
  ready_ += backward_ms;
}

double BucketedAllreduce::tail_ms(bool overlap) const {
  if (!overlap) return closed_ms_ + ar_.at(bucket_);
  const double end = bucket_ > 0 ? std::max(done_, ready_) + ar_.at(bucket_) : done_;
  return std::max(0.0, end - ready_);
}

double bucketed_allreduce_ms(const Profile& profile, int first, int last, int rows, const LinearCost& ar,
                             bool overlap) {
  BucketedAllreduce buckets(ar);
  for (int l = last; l >= first; --l)
    buckets.add_layer(profile.layers[static_cast<std::size_t>(l)].parameter_bytes,
                      profile.cost_at(l, rows).backward_ms);
  return buckets.tail_ms(overlap);
}

RangeCost range_cost(const Profile& profile, int first, int last, int rows) {
  RangeCost cost;
  cost.kept_bytes = first > 0 ? profile.cost_at(first - 1, rows).boundary_bytes : 0.0;
  for (int l = first; l <= last; ++l) extend_range_cost(cost, profile, l, rows);
  return cost;
}

void extend_range_cost(RangeCost& cost, const Profile& profile, int layer, int rows) {
  const LayerCost c = profile.cost_at(layer, rows);
  cost.forward_ms += c.forward_ms;
  cost.backward_ms += c.backward_ms;
  cost.kept_bytes += c.activation_bytes;
}

PlanCost evaluate(const Profile& profile, const Cluster& cluster, const Plan& plan, const CostOptions& options) {
  validate(plan, profile.size(), cluster.devices());
  const int b = plan.microbatch_size(), stages = plan.stage_count(), m = plan.microbatches;
  PlanCost cost;
  std::vector<Element> elements;
  for (int s = 0; s < stages; ++s) {
    const StagePlan& stage = plan.stages[s];
    const int rows = ceil_div(b, stage.replicas());
    StageEstimate sc;
    const RangeCost work = range_cost(profile, stage.first_layer, stage.last_layer, rows);
    sc.forward_ms = work.forward_ms;
    sc.backward_ms = work.backward_ms;
    const double activations = work.kept_bytes;
    const double weights = profile.parameter_bytes(stage.first_layer, stage.last_layer);
    const LinearCost ar = allreduce_cost(cluster, stage.devices);
    // The papers' allreduce after the backward; overlapped, the runtime's buckets (bucketed_allreduce_ms).
    sc.allreduce_ms = plan.overlap_allreduce
                          ? bucketed_allreduce_ms(profile, stage.first_layer, stage.last_layer, rows, ar, true)
                          : ar.at(weights);
    sc.in_flight = plan.schedule == ScheduleKind::gpipe ? m : std::min(stages - s, m);
    sc.memory_bytes = weights * (2 + options.optimizer_state_factor) + sc.in_flight * activations;
    if (s + 1 < stages) {
      const double bytes = profile.cost_at(stage.last_layer, b).boundary_bytes;
      sc.transfer_ms = transfer_ms(cluster, stage.devices, plan.stages[s + 1].devices, b, bytes);
    }
    elements.push_back({sc.forward_ms, sc.backward_ms, sc.allreduce_ms});
    if (s + 1 < stages) elements.push_back({sc.transfer_ms, sc.transfer_ms, 0});
    cost.peak_memory_bytes = std::max(cost.peak_memory_bytes, sc.memory_bytes);
    if (sc.memory_bytes > cluster.device_memory && cost.feasible) {
      cost.feasible = false;
      cost.infeasible_reason = loom::detail::concat("stage ", s, " needs ", sc.memory_bytes / 1e9, " GB per device, ",
                                              cluster.device_memory / 1e9, " GB available");
    }
    cost.stages.push_back(sc);
  }
  const PipelineLatency latency =
      plan.schedule == ScheduleKind::gpipe ? gpipe_latency(elements, m) : dapple_latency(elements, m);
  cost.step_ms = latency.step_ms;
  cost.pivot = latency.pivot;
  cost.pivot_is_round_trip = latency.pivot_is_round_trip;
  cost.warmup_ms = latency.warmup_ms;
  cost.steady_ms = latency.steady_ms;
  cost.end_ms = latency.end_ms;
  for (int s = 0; s < stages; ++s) cost.stages[s].allreduce_tail_ms = latency.allreduce_tail_ms[2 * s];
  return cost;
}

}  // namespace loom::planner
