// WeightStash (see weight_stash.h).
#include <loom/runtime/weight_stash.h>

#include <loom/base/error.h>
#include <loom/core/memory.h>

namespace loom::runtime {

namespace {
bool stashing_off = false;
}  // namespace

void set_weight_stashing_off_for_experiment(bool off) { stashing_off = off; }

WeightStash::WeightStash(std::vector<Parameter*> parameters, const std::vector<schedule::Action>& program)
    : parameters_(std::move(parameters)), off_(stashing_off) {
  for (std::size_t i = 0; i < program.size(); ++i)
    if (schedule::is_compute(program[i].op) && program[i].version >= 0) last_use_[program[i].version] = i;
}

void WeightStash::enter(int version) {
  if (off_ || version < 0 || version == newest_) return;
  LOOM_CHECK(version < newest_, "weight stash: action uses weight version ", version, " but only ", newest_,
             " exists yet");
  auto it = stashed_.find(version);
  LOOM_CHECK(it != stashed_.end(), "weight stash: weight version ", version, " was not stashed");
  newest_values_.clear();
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    newest_values_.push_back(parameters_[i]->value);
    parameters_[i]->value = it->second[i];
  }
}

void WeightStash::leave(int version, std::size_t index) {
  if (!newest_values_.empty()) {
    for (std::size_t i = 0; i < parameters_.size(); ++i) parameters_[i]->value = newest_values_[i];
    newest_values_.clear();
  }
  auto last = last_use_.find(version);
  if (version >= 0 && last != last_use_.end() && last->second == index) stashed_.erase(version);
}

void WeightStash::before_step(std::size_t index) {
  auto it = last_use_.find(newest_);
  if (off_ || it == last_use_.end() || it->second <= index || stashed_.count(newest_)) return;
  MemoryCategoryScope scope(MemoryCategory::parameters);
  std::vector<Tensor> copy;
  for (Parameter* p : parameters_) copy.push_back(p->value.clone());
  stashed_[newest_] = std::move(copy);
}

void WeightStash::check_empty() const {
  LOOM_CHECK(stashed_.empty(), "weight stash: ", stashed_.size(), " stashed weight versions outlived the run");
}

}  // namespace loom::runtime
