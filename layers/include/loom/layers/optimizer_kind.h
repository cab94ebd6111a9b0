// The optimizer names loom knows, shared by `loom train` (which builds them, optimizer_step.h) and
// `loom plan` (which counts their state). Header-only, so the core-free planner can use it.
//   sgd       torch.optim.SGD with the run's momentum (a momentum buffer when momentum > 0)
//   momentum  SGD with momentum (momentum must be > 0)
//   adam      torch.optim.Adam (exp_avg, exp_avg_sq)
//   adamw     torch.optim.AdamW (decoupled weight decay)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include <loom/base/error.h>

namespace loom {

enum class OptimizerKind : std::uint8_t { sgd, momentum, adam, adamw };

inline constexpr std::array<std::string_view, 4> kOptimizerKindNames = {"sgd", "momentum", "adam", "adamw"};

inline std::string_view optimizer_kind_name(OptimizerKind kind) {
  return kOptimizerKindNames.at(static_cast<std::size_t>(kind));
}

// "sgd, momentum, adam or adamw", for messages and --help.
inline std::string optimizer_kind_list() { return "sgd, momentum, adam or adamw"; }

// Unknown names: a loom::Error naming `source` (the flag or file that gave it).
inline OptimizerKind parse_optimizer_kind(std::string_view name, std::string_view source = "--optimizer") {
  for (std::size_t i = 0; i < kOptimizerKindNames.size(); ++i)
    if (kOptimizerKindNames[i] == name) return static_cast<OptimizerKind>(i);
  LOOM_THROW(source, ": unknown optimizer '", name, "' (expected ", optimizer_kind_list(), ")");
}

// The learning rate `loom train` uses when --lr is not given: SGD's steps take a rate near 0.05 on
// loom's models, Adam's normalised steps a rate near 0.001 (the usual default of Adam and AdamW).
inline double default_learning_rate(OptimizerKind kind) {
  return kind == OptimizerKind::adam || kind == OptimizerKind::adamw ? 1e-3 : 0.05;
}

// Optimizer state per parameter, in parameter-sized tensors: what a device holds beyond the
// parameters and their gradients.
inline int optimizer_state_tensors(OptimizerKind kind, double momentum = 0.0) {
  switch (kind) {
    case OptimizerKind::sgd: return momentum != 0.0 ? 1 : 0;
    case OptimizerKind::momentum: return 1;
    case OptimizerKind::adam:
    case OptimizerKind::adamw: return 2;
  }
  return 0;
}

}  // namespace loom
