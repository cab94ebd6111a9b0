// Static checks of a schedule (see validator.h for the rules) and its memory profile.
//
// Deadlock-freedom is checked by running the programs with zero costs under the executor's
// semantics: compute, AR and STEP always proceed, sends never block, a receive proceeds once its
// send has run. Since nothing else blocks, the programs finish iff this run finishes, and when it
// sticks the waiting receives are the cycle we report.
#include <loom/schedule/validator.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include <loom/base/error.h>
#include "messages.h"

namespace loom::schedule {

namespace {

constexpr std::size_t kMaxErrors = 20;

struct Reporter {
  std::vector<std::string>& errors;
  template <typename... Parts>
  void operator()(const Parts&... parts) {
    if (errors.size() < kMaxErrors) errors.push_back(loom::detail::concat(parts...));
  }
};

// Where each kind of action sits for one (micro-batch, chunk) on one stage.
struct Positions {
  std::vector<int> forward, backward, backward_input, backward_weight;
  std::vector<int> send_activation, recv_activation, send_gradient, recv_gradient;
  std::vector<int>& of(Op op) {
    switch (op) {
      case Op::Forward: return forward;
      case Op::Backward: return backward;
      case Op::BackwardInput: return backward_input;
      case Op::BackwardWeight: return backward_weight;
      case Op::SendActivation: return send_activation;
      case Op::RecvActivation: return recv_activation;
      case Op::SendGradient: return send_gradient;
      case Op::RecvGradient: return recv_gradient;
      default: break;
    }
    LOOM_THROW("internal: no position list for ", op_name(op));
  }
};

std::string token(const Schedule& schedule, Op op, int microbatch, int chunk) {
  return to_string(Action{op, microbatch, chunk, -1}, schedule.chunks > 1);
}

// What is wrong with the placement, at most kMaxErrors lines; empty when it is fine.
std::vector<std::string> placement_problems(const Schedule& schedule) {
  std::vector<std::string> problems;
  Reporter report{problems};
  if (schedule.placement.empty()) return problems;
  const int stages = schedule.stages, chunks = schedule.chunks, total = stages * chunks;
  if (static_cast<long long>(schedule.placement.size()) != total) {
    report("the placement has ", schedule.placement.size(), " entries, but ", stages, " stages x ", chunks,
           " chunks need ", total, " (one virtual stage for each chunk of each stage)");
    return problems;
  }
  std::vector<int> holder(static_cast<std::size_t>(total), -1);  // virtual stage -> index into placement
  for (int c = 0; c < chunks; ++c)
    for (int s = 0; s < stages; ++s) {
      const int index = c * stages + s;
      const int j = schedule.placement[static_cast<std::size_t>(index)];
      if (j < 0 || j >= total) {
        report("the placement gives stage ", s, " chunk ", c, " virtual stage ", j, ", outside 0..", total - 1);
      } else if (holder[static_cast<std::size_t>(j)] >= 0) {
        const int other = holder[static_cast<std::size_t>(j)];
        report("the placement gives virtual stage ", j, " to both stage ", other % stages, " chunk ", other / stages,
               " and stage ", s, " chunk ", c, " (each virtual stage goes to one chunk)");
      } else {
        holder[static_cast<std::size_t>(j)] = index;
      }
    }
  if (problems.empty())  // S·v entries in range, none twice: a permutation
    return problems;
  for (int j = 0; j < total; ++j)
    if (holder[static_cast<std::size_t>(j)] < 0) report("the placement gives virtual stage ", j, " to no chunk");
  return problems;
}

bool check_shape(const Schedule& schedule, Reporter& report) {
  if (schedule.stages < 1 || schedule.microbatches < 1 || schedule.chunks < 1) {
    report("the schedule needs stages, micro-batches and chunks >= 1 (has S=", schedule.stages, ", M=",
           schedule.microbatches, ", v=", schedule.chunks, ")");
    return false;
  }
  try {
    check_size(schedule.stages, schedule.microbatches, schedule.chunks, "the schedule");
  } catch (const loom::Error& e) {
    report(e.what());
    return false;
  }
  if (static_cast<int>(schedule.programs.size()) != schedule.stages) {
    report("the schedule has ", schedule.programs.size(), " programs for ", schedule.stages, " stages");
    return false;
  }
  if (const auto problems = placement_problems(schedule); !problems.empty()) {
    for (const std::string& problem : problems) report(problem);
    return false;
  }
  bool ok = true;
  for (int s = 0; s < schedule.stages; ++s) {
    for (std::size_t i = 0; i < schedule.programs[s].size(); ++i) {
      const Action& a = schedule.programs[s][i];
      const bool per_microbatch = a.op != Op::AllReduce && a.op != Op::Step;
      if (per_microbatch && (a.microbatch < 0 || a.microbatch >= schedule.microbatches)) {
        report("stage ", s, ", action ", i + 1, " (", to_string(a, true), "): micro-batch out of range 0..",
               schedule.microbatches - 1);
        ok = false;
      } else if (per_microbatch && (a.chunk < 0 || a.chunk >= schedule.chunks)) {
        report("stage ", s, ", action ", i + 1, " (", to_string(a, true), "): chunk out of range 0..", schedule.chunks - 1);
        ok = false;
      }
    }
  }
  return ok;
}

// A boundary between two chunks of stage s is handed over in memory: no other rank sends it, so the
// send (SA after the producing F, SG after the consuming B/BI) must come before its receive in the
// same program, or the stage would wait for itself.
void check_local_handovers(const Schedule& schedule, int s, std::map<std::pair<int, int>, Positions>& positions,
                           Reporter& report) {
  std::map<int, int> chunk_of;  // virtual stage -> chunk, for the chunks of stage s
  for (int c = 0; c < schedule.chunks; ++c) chunk_of[schedule.virtual_stage(s, c)] = c;
  for (int c = 0; c < schedule.chunks; ++c) {
    const int j = schedule.virtual_stage(s, c);
    const auto found = chunk_of.find(j + 1);
    if (found == chunk_of.end()) continue;  // the next virtual stage is on another stage (or none)
    const int next = found->second;
    for (int m = 0; m < schedule.microbatches; ++m) {
      auto order = [&](Op send_op, int send_chunk, Op receive_op, int receive_chunk) {
        const auto& sends = positions[{m, send_chunk}].of(send_op);
        const auto& receives = positions[{m, receive_chunk}].of(receive_op);
        if (sends.empty() || receives.empty() || sends.front() < receives.front()) return;
        report("stage ", s, ": ", token(schedule, receive_op, m, receive_chunk), " (action ", receives.front() + 1,
               ") comes before ", token(schedule, send_op, m, send_chunk), " (action ", sends.front() + 1,
               "), but virtual stages ", j, " and ", j + 1, " are both on stage ", s,
               ": the hand-over is local, so its send must come first");
      };
      order(Op::SendActivation, c, Op::RecvActivation, next);
      order(Op::SendGradient, next, Op::RecvGradient, c);
    }
  }
}

// Counts and order of compute and transfers, per (micro-batch, chunk) on each stage.
void check_work(const Schedule& schedule, Reporter& report) {
  for (int s = 0; s < schedule.stages; ++s) {
    std::map<std::pair<int, int>, Positions> positions;
    const auto& program = schedule.programs[s];
    for (int i = 0; i < static_cast<int>(program.size()); ++i) {
      const Action& a = program[i];
      if (is_compute(a.op) || is_communication(a.op)) positions[{a.microbatch, a.chunk}].of(a.op).push_back(i);
    }
    for (int c = 0; c < schedule.chunks; ++c) {
      const bool first = schedule.is_first(s, c), last = schedule.is_last(s, c);
      for (int m = 0; m < schedule.microbatches; ++m) {
        Positions& p = positions[{m, c}];
        auto name = [&](Op op) { return token(schedule, op, m, c); };
        auto at = [&](const std::vector<int>& where) { return where.empty() ? -1 : where.front(); };
        auto exactly_once = [&](Op op, const char* why) {
          const auto& where = p.of(op);
          if (where.size() == 1) return true;
          if (where.empty())
            report("stage ", s, ": ", name(op), " is missing", why);
          else
            report("stage ", s, ": ", name(op), " appears ", where.size(), " times (actions ", where[0] + 1, " and ",
                   where[1] + 1, ")");
          return false;
        };
        auto never = [&](Op op, const char* why) {
          if (!p.of(op).empty())
            report("stage ", s, ", action ", p.of(op).front() + 1, ": ", name(op), " is not allowed: ", why);
        };
        auto before = [&](Op earlier, Op later) {
          const int e = at(p.of(earlier)), l = at(p.of(later));
          if (e >= 0 && l >= 0 && e > l)
            report("stage ", s, ": ", name(later), " (action ", l + 1, ") comes before ", name(earlier), " (action ",
                   e + 1, ")");
        };

        const bool forward_ok = exactly_once(Op::Forward, "");
        const bool split = !p.backward_input.empty() || !p.backward_weight.empty();
        Op backward_start = Op::Backward;
        if (split) {
          backward_start = Op::BackwardInput;
          if (!p.backward.empty())
            report("stage ", s, ": micro-batch ", m, (schedule.chunks > 1 ? " chunk " + std::to_string(c) : ""),
                   " has both B and BI/BW");
          exactly_once(Op::BackwardInput, " (BW needs a BI before it)");
          exactly_once(Op::BackwardWeight, " (BI without BW leaves the weight gradient uncomputed)");
          before(Op::BackwardInput, Op::BackwardWeight);
        } else {
          exactly_once(Op::Backward, " (or BI and BW)");
        }
        if (forward_ok) before(Op::Forward, backward_start);

        if (first) {
          never(Op::RecvActivation, "the first virtual stage reads its input from the data");
          never(Op::SendGradient, "the first virtual stage has nobody to send an input gradient to");
        } else {
          exactly_once(Op::RecvActivation, " (the forward needs its input from the previous stage)");
          exactly_once(Op::SendGradient, " (the previous stage waits for this input gradient)");
          before(Op::RecvActivation, Op::Forward);
          before(backward_start, Op::SendGradient);
        }
        if (last) {
          never(Op::SendActivation, "the last virtual stage computes the loss and sends nothing on");
          never(Op::RecvGradient, "the last virtual stage starts the backward from the loss");
        } else {
          exactly_once(Op::SendActivation, " (the next stage waits for this activation)");
          exactly_once(Op::RecvGradient, " (the backward needs the output gradient from the next stage)");
          before(Op::Forward, Op::SendActivation);
          before(Op::RecvGradient, backward_start);
        }
      }
    }
    check_local_handovers(schedule, s, positions, report);
  }
}

// Overlapped pairs (overlap.h): a forward half followed at once by a backward half, F then B.
void check_overlap(const Schedule& schedule, Reporter& report) {
  for (int s = 0; s < schedule.stages; ++s) {
    const auto& program = schedule.programs[s];
    for (std::size_t i = 0; i < program.size(); ++i) {
      const Action& a = program[i];
      if (a.overlap == Overlap::none) continue;
      const bool forward_half = a.overlap == Overlap::forward_half;
      const bool paired = forward_half ? i + 1 < program.size() && program[i + 1].overlap == Overlap::backward_half
                                       : i > 0 && program[i - 1].overlap == Overlap::forward_half;
      const std::string name = to_string(a, schedule.chunks > 1);
      if (!paired)
        report("stage ", s, ", action ", i + 1, ": ", name, " is half of an overlapped pair whose other half is not ",
               forward_half ? "right after it" : "right before it");
      else if (a.op != (forward_half ? Op::Forward : Op::Backward))
        report("stage ", s, ", action ", i + 1, ": ", name, " cannot be the ", forward_half ? "first" : "second",
               " half of an overlapped pair (a forward F, then a full backward B)");
      else if (a.version >= 0)
        report("stage ", s, ", action ", i + 1, ": ", name,
               " is overlapped, but overlapped pairs need a synchronous schedule (no weight versions)");
    }
  }
}

// One AR and one STEP after all compute (synchronous), or versions that exist (asynchronous).
void check_updates(const Schedule& schedule, Reporter& report) {
  const bool asynchronous = schedule.asynchronous();
  for (int s = 0; s < schedule.stages; ++s) {
    const auto& program = schedule.programs[s];
    if (!asynchronous) {
      int last_compute = -1;
      std::vector<int> allreduces, steps;
      for (int i = 0; i < static_cast<int>(program.size()); ++i) {
        if (is_compute(program[i].op)) last_compute = i;
        if (program[i].op == Op::AllReduce) allreduces.push_back(i);
        if (program[i].op == Op::Step) steps.push_back(i);
      }
      if (allreduces.size() != 1 || steps.size() != 1) {
        report("stage ", s, ": a synchronous schedule has exactly one AR and one STEP per stage (found ",
               allreduces.size(), " AR and ", steps.size(), " STEP)");
        continue;
      }
      if (allreduces[0] < last_compute)
        report("stage ", s, ": AR (action ", allreduces[0] + 1, ") comes before the last compute (action ",
               last_compute + 1, ", ", to_string(program[last_compute], schedule.chunks > 1),
               "): gradients are not final yet");
      if (steps[0] < allreduces[0])
        report("stage ", s, ": STEP (action ", steps[0] + 1, ") comes before AR (action ", allreduces[0] + 1, ")");
      continue;
    }
    int steps = 0;
    std::map<std::pair<int, int>, int> forward_version;
    for (int i = 0; i < static_cast<int>(program.size()); ++i) {
      const Action& a = program[i];
      if (a.op == Op::Step) ++steps;
      if (!is_compute(a.op)) continue;
      const std::string name = to_string(a, schedule.chunks > 1);
      if (a.version < 0) {
        report("stage ", s, ", action ", i + 1, ": ", name,
               " has no weight version, but this schedule is asynchronous (other actions have one)");
        continue;
      }
      if (a.op == Op::Forward) {
        if (a.version > steps)
          report("stage ", s, ", action ", i + 1, ": ", name, " uses weight version ", a.version, " but the stage has done only ",
                 steps, " STEPs by then");
        forward_version[{a.microbatch, a.chunk}] = a.version;
      } else {
        auto found = forward_version.find({a.microbatch, a.chunk});
        if (found != forward_version.end() && found->second != a.version)
          report("stage ", s, ", action ", i + 1, ": ", name, " uses weight version ", a.version,
                 " but its forward used version ", found->second, " (weight stashing runs a backward with its forward's weights)");
      }
    }
  }
}

void check_deadlock(const Schedule& schedule, Reporter& report) {
  const int stages = schedule.stages;
  std::vector<std::size_t> next(stages, 0);
  std::set<detail::MessageKey> sent;
  const std::vector<int> holder = detail::holders(schedule);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      const auto& program = schedule.programs[s];
      while (next[s] < program.size()) {
        const Action& a = program[next[s]];
        // A local hand-over's send comes earlier in this same program (check_local_handovers), so
        // its receive never waits for another rank; any other receive waits for its sender.
        if (is_receive(a.op) && !detail::is_local(holder, schedule, s, a) && !sent.count(detail::received_message(schedule, s, a)))
          break;
        if (is_send(a.op)) sent.insert(detail::sent_message(schedule, s, a));
        ++next[s];
        progress = true;
      }
    }
  }
  std::ostringstream stuck;
  for (int s = 0; s < stages; ++s) {
    if (next[s] == schedule.programs[s].size()) continue;
    const Action& waiting = schedule.programs[s][next[s]];
    const detail::MessageKey key = detail::received_message(schedule, s, waiting);
    const int sender = detail::sender_stage(schedule, s, waiting);
    stuck << (stuck.tellp() > 0 ? "; " : "") << "stage " << s << " waits at " << to_string(waiting, schedule.chunks > 1)
          << " (action " << next[s] + 1 << ")";
    const auto& program = schedule.programs[sender];
    for (std::size_t j = 0; j < program.size(); ++j)
      if (is_send(program[j].op) && detail::sent_message(schedule, sender, program[j]) == key) {
        stuck << " for stage " << sender << "'s " << to_string(program[j], schedule.chunks > 1) << " (action " << j + 1
              << ")";
        if (next[sender] < program.size())
          stuck << ", which comes after stage " << sender << "'s own wait at action " << next[sender] + 1;
        break;
      }
  }
  if (stuck.tellp() > 0) report("deadlock under the executor's semantics: ", stuck.str());
}

}  // namespace

StageMemory stage_memory(const std::vector<Action>& program) {
  StageMemory memory;
  std::map<std::pair<int, int>, int> inflight;  // (micro-batch, chunk) -> version
  int steps = 0;
  bool versions = false;
  for (const Action& a : program) {
    if (a.op == Op::Step) ++steps;
    if (a.op == Op::Forward) inflight[{a.microbatch, a.chunk}] = a.version;
    if (ends_backward(a.op)) inflight.erase({a.microbatch, a.chunk});
    versions = versions || a.version >= 0;
    memory.peak_inflight = std::max(memory.peak_inflight, static_cast<int>(inflight.size()));
    if (versions) {
      std::set<int> alive = {steps};
      for (const auto& [key, version] : inflight)
        if (version >= 0) alive.insert(version);
      memory.peak_weight_versions = std::max(memory.peak_weight_versions, static_cast<int>(alive.size()));
    }
  }
  return memory;
}

void check_placement(const Schedule& schedule, const std::string& source) {
  const auto problems = placement_problems(schedule);
  if (problems.empty()) return;
  LOOM_THROW(source, source.empty() ? "" : ": ", "schedule '", schedule.name, "': ", problems.front(),
             problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) + " more problems)" : "");
}

void check_size(int stages, int microbatches, int chunks, const std::string& source) {
  LOOM_CHECK(stages >= 1 && stages <= kMaxStages, source, ": S = ", stages, " stages is outside [1, ",
                  kMaxStages, "]");
  LOOM_CHECK(microbatches >= 1 && microbatches <= kMaxMicrobatches, source, ": M = ", microbatches,
                  " micro-batches is outside [1, ", kMaxMicrobatches, "]");
  LOOM_CHECK(chunks >= 1 && chunks <= kMaxChunks, source, ": v = ", chunks, " chunks is outside [1, ",
                  kMaxChunks, "]");
  const long long cells = static_cast<long long>(stages) * microbatches * chunks;
  LOOM_CHECK(cells <= kMaxScheduleCells, source, ": S x M x v = ", stages, " x ", microbatches, " x ", chunks,
                  " = ", cells, " is more than the ", kMaxScheduleCells, " a schedule may have");
}

ValidationReport validate(const Schedule& schedule) {
  ValidationReport result;
  Reporter report{result.errors};
  if (!check_shape(schedule, report)) return result;
  check_work(schedule, report);
  check_overlap(schedule, report);
  check_updates(schedule, report);
  // A missing send or receive would show up again as a deadlock; report the cause only.
  if (result.errors.empty()) check_deadlock(schedule, report);
  for (const auto& program : schedule.programs) result.stages.push_back(stage_memory(program));
  return result;
}

void check(const Schedule& schedule, const std::string& source) {
  ValidationReport result = validate(schedule);
  if (result.ok()) return;
  std::string message = (source.empty() ? "" : source + ": ") + "invalid schedule '" + schedule.name +
                        "': " + result.errors.front();
  if (result.errors.size() > 1) message += " (and " + std::to_string(result.errors.size() - 1) + " more problems)";
  LOOM_THROW(message);
}

}  // namespace loom::schedule
