// ZeRO-1 slices of a stage's parameters (see zero_shard.h).
#include <loom/runtime/zero_shard.h>

#include <algorithm>
#include <utility>

#include <loom/comm/mpi_session.h>

#include <loom/base/error.h>
#include <loom/core/memory.h>
#include <loom/core/ops.h>

namespace loom::runtime {

namespace {

// Elements [range) of a tensor seen flat, as a view.
Tensor flat_range(const Tensor& tensor, comm::Range range) {
  return tensor.reshape(Shape{tensor.numel()}).slice(range.begin, range.end);
}

}  // namespace

ZeroShard::ZeroShard(const std::vector<NamedParameter>& parameters, comm::Communicator& replicas, std::int64_t window)
    : parameters_(parameters), replicas_(replicas), owners_(comm::RangeSplit::even(1, 1)), window_(window) {
  std::int64_t total = 0;
  for (const NamedParameter& p : parameters_) {
    LOOM_CHECK(p.parameter->value.dtype() == parameters_.front().parameter->value.dtype(),
               "--zero 1: the stage's parameters must share one dtype ('", p.name, "' does not)");
    starts_.push_back(total);
    total += p.parameter->value.numel();
  }
  LOOM_CHECK(total >= replicas.size(), "--zero 1: the stage has ", total, " parameter values, fewer than its ",
             replicas.size(), " replicas");
  owners_ = comm::RangeSplit::even(total, replicas.size());
  const comm::Range mine = range();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const Parameter& p = *parameters_[i].parameter;
    const comm::Range in_flat = comm::intersect(mine, {starts_[i], starts_[i] + p.value.numel()});
    view_of_.push_back(in_flat.empty() ? -1 : static_cast<int>(views_.size()));
    if (in_flat.empty()) continue;
    const comm::Range local{in_flat.begin - starts_[i], in_flat.end - starts_[i]};
    auto view = std::make_unique<Parameter>();
    view->name = p.name;
    view->value = flat_range(p.value, local);
    view->grad = flat_range(p.grad, local);
    view->init = p.init;
    view->trainable = true;
    slice_.push_back({parameters_[i].name, view.get()});
    offsets_[parameters_[i].name] = local.begin;
    views_.push_back(std::move(view));
  }
}

ZeroShard::~ZeroShard() {
  if (gatherer_.joinable()) gatherer_.join();  // a stuck gather ends through the watchdog
}

void ZeroShard::start_gather() {
  wait_gather();
  if (!parameters_.front().parameter->value.device().is_cpu() || !comm::mpi_thread_multiple()) return gather();
  gatherer_ = std::thread([this] {
    try {
      gather();
    } catch (...) {
      gather_error_ = std::current_exception();
    }
  });
}

void ZeroShard::wait_gather() {
  if (gatherer_.joinable()) gatherer_.join();
  if (std::exception_ptr error = std::exchange(gather_error_, nullptr)) std::rethrow_exception(error);
}

std::int64_t ZeroShard::start_of(const Parameter* parameter) const {
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (parameters_[i].parameter == parameter) return starts_[i];
  return -1;
}

void ZeroShard::gather() {
  const DType dtype = parameters_.front().parameter->value.dtype();
  MemoryCategoryScope staging(MemoryCategory::communication);
  for (std::int64_t w0 = 0; w0 < total(); w0 += window_) {
    const comm::Range window{w0, std::min(total(), w0 + window_)};
    Tensor flat = Tensor::empty(Shape{window.size()}, dtype);
    std::vector<std::int64_t> offsets;
    for (int r = 0; r < replicas_.size(); ++r)
      offsets.push_back(std::clamp(owners_.part(r).begin, window.begin, window.end) - window.begin);
    offsets.push_back(window.size());
    // Pack this replica's part of the window, exchange, unpack every parameter the window meets.
    for (const bool pack : {true, false}) {
      const comm::Range part = pack ? comm::intersect(range(), window) : window;
      for (std::size_t i = 0; i < parameters_.size(); ++i) {
        Tensor& value = parameters_[i].parameter->value;
        const comm::Range both = comm::intersect(part, {starts_[i], starts_[i] + value.numel()});
        if (both.empty()) continue;
        Tensor model = flat_range(value, {both.begin - starts_[i], both.end - starts_[i]});
        Tensor staged = flat.slice(both.begin - window.begin, both.end - window.begin);
        pack ? ops::copy(model, staged) : ops::copy(staged, model);
      }
      if (pack) replicas_.allgather(flat.raw_data(), comm::RangeSplit(offsets), dtype);
    }
  }
}

Tensor ZeroShard::gather_whole(std::size_t parameter, const Tensor* piece) {
  const Tensor& value = parameters_.at(parameter).parameter->value;
  MemoryCategoryScope staging(MemoryCategory::communication);
  Tensor full = Tensor::zeros(Shape{value.numel()}, DType::f32);
  if (piece) {
    const std::int64_t offset = offsets_.at(parameters_[parameter].name);
    Tensor target = full.slice(offset, offset + piece->numel());
    ops::copy(piece->reshape(Shape{piece->numel()}), target);
  }
  replicas_.allreduce(full.raw_data(), full.numel(), DType::f32);  // each element held by one replica
  return full.reshape(value.shape());
}

}  // namespace loom::runtime
