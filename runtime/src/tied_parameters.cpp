// Tied parameters across a pipelined run (see tied_parameters.h).
#include <loom/runtime/tied_parameters.h>

#include <climits>
#include <optional>

#include <loom/comm/control.h>
#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>

namespace loom::runtime {

struct TiedParameters::Local {
  Parameter* canonical;
  Parameter* copy;
};

struct TiedParameters::Across {
  Parameter* held;                               // the canonical or the copy, whichever this rank holds
  std::unique_ptr<comm::Communicator> group;     // every rank holding either
  int root = 0;                                  // a canonical holder's rank in `group`
  std::optional<comm::Range> owned;              // --zero 1: this replica's elements of `held`
};

namespace {

Parameter* find(const std::vector<NamedParameter>& parameters, const std::string& name) {
  for (const NamedParameter& p : parameters)
    if (p.name == name) return p.parameter;
  return nullptr;
}

// A collective of the group on a tensor of any device: through host memory where it is a device's.
template <typename Collective>
void on_host(Tensor& tensor, Collective collective) {
  if (tensor.device().is_cpu()) {
    collective(tensor);
    return;
  }
  MemoryCategoryScope staging(MemoryCategory::communication);
  Tensor host = tensor.to(Device::cpu());
  collective(host);
  ops::copy(host, tensor);
}

}  // namespace

TiedParameters::TiedParameters(const std::vector<ParameterTie>& ties, const std::vector<NamedParameter>& parameters,
                               comm::Communicator& world, bool first_replica)
    : first_replica_(first_replica) {
  for (std::size_t t = 0; t < ties.size(); ++t) {
    Parameter* canonical = find(parameters, ties[t].canonical);
    Parameter* copy = find(parameters, ties[t].copy);
    const bool both = canonical && copy, either = canonical || copy;
    if (both) {
      LOOM_CHECK(canonical->value.shape() == copy->value.shape(), "tied parameters '", ties[t].canonical, "' ",
                 canonical->value.shape().str(), " and '", ties[t].copy, "' ", copy->value.shape().str(),
                 " differ in shape");
      local_.push_back({canonical, copy});
      shared_.insert(ties[t].copy);
      copies_.insert(ties[t].copy);
    }
    // Collective over the world for every tie, on every rank: those holding one of the two join.
    std::unique_ptr<comm::Communicator> group = world.split(either && !both ? static_cast<int>(t) : -1, world.rank());
    if (!group) continue;
    const std::int64_t here = canonical ? group->rank() : INT_MAX;
    const std::int64_t root = -comm::max_over(*group, {-here}).at(0);
    LOOM_CHECK(root != INT_MAX, "tied parameter '", ties[t].copy, "': no rank holds '", ties[t].canonical, "'");
    across_.push_back({canonical ? canonical : copy, std::move(group), static_cast<int>(root), std::nullopt});
    if (copy) {
      copies_.insert(ties[t].copy);
      renames_[ties[t].copy] = ties[t].canonical;
    }
  }
}

TiedParameters::~TiedParameters() = default;

void TiedParameters::initialize() {
  for (Local& tie : local_) tie.copy->value = tie.canonical->value;  // one tensor
  for (Across& tie : across_)
    on_host(tie.held->value, [&](Tensor& value) {
      tie.group->broadcast(value.raw_data(), value.numel(), value.dtype(), tie.root);
    });
}

void TiedParameters::sum_gradients() {
  for (Local& tie : local_) {  // the copy's gradient moves into the canonical's
    ops::axpy(1.0, tie.copy->grad, tie.canonical->grad);
    ops::fill(tie.copy->grad, 0.0);
  }
  for (Across& tie : across_)
    on_host(tie.held->grad, [&](Tensor& grad) {
      if (tie.owned) {  // the stage's share once: each element's from the replica whose slice holds it
        const Tensor flat = grad.reshape(Shape{grad.numel()});
        Tensor before = flat.slice(0, tie.owned->begin), after = flat.slice(tie.owned->end, grad.numel());
        ops::fill(before, 0.0);
        ops::fill(after, 0.0);
      } else if (!first_replica_) {
        ops::fill(grad, 0.0);  // the stage's share once: replica 0's
      }
      tie.group->allreduce(grad.raw_data(), grad.numel(), grad.dtype());
    });
}

void TiedParameters::shard(const ZeroShard& shard) {
  for (Across& tie : across_) {
    const std::int64_t start = shard.start_of(tie.held);
    LOOM_CHECK(start >= 0, "internal: a tied copy held across stages is not in the ZeRO-1 slices");
    const comm::Range mine = comm::intersect(shard.range(), {start, start + tie.held->value.numel()});
    tie.owned = mine.empty() ? comm::Range{0, 0} : comm::Range{mine.begin - start, mine.end - start};
  }
}

}  // namespace loom::runtime
