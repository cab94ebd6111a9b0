// loom::Error from this library without linking loom::core: the schedule IR and simulator are pure
// data, so the planner links them without the tensor engine. Only error.h's inline parts are used.
#pragma once

#include <loom/core/error.h>

namespace loom::schedule::detail {

template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw loom::Error(loom::detail::concat(parts...));
}

template <typename... Parts>
void require(bool condition, const Parts&... parts) {
  if (!condition) fail(parts...);
}

}  // namespace loom::schedule::detail
