// The 1F1B compute order shared by DAPPLE, PipeDream and PipeDream-2BW: K forwards, then one
// backward and one forward alternately, then the remaining backwards.
#pragma once

#include <vector>

#include <loom/schedule/action.h>

namespace loom::schedule::detail {

std::vector<Action> one_f_one_b_order(int microbatches, int warmup);

}  // namespace loom::schedule::detail
