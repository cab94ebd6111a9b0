// The planner throws loom::Error like every module, but it does not link loom::core (it is
// core-free by design), so it uses the inline Error type directly instead of LOOM_CHECK, whose
// helper lives in core's library. Messages about user files name the file and line themselves.
#pragma once

#include <loom/core/error.h>

namespace loom::planner::detail {

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw loom::Error(loom::detail::concat(parts...));
}

}  // namespace loom::planner::detail
