#include <loom/comm/link_shaper.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include <loom/comm/mpi_session.h>
#include <loom/base/error.h>

namespace loom::comm {

namespace {

using Clock = std::chrono::steady_clock;

struct Shaper {
  std::mutex mutex;
  std::atomic<bool> enabled{false};
  LinkShaping shaping;
  std::optional<Topology> topology;
  Clock::time_point intra_busy_until{};
  Clock::time_point inter_busy_until{};
};

Shaper& shaper() {
  static Shaper* instance = new Shaper();  // used from comm threads until exit
  return *instance;
}

}  // namespace

void enable_link_shaping(const Topology& topology, const LinkShaping& shaping) {
  LOOM_CHECK(shaping.intra_gbps >= 0 && shaping.inter_gbps >= 0, "link shaping bandwidths must be >= 0 GB/s");
  Shaper& s = shaper();
  std::lock_guard lock(s.mutex);
  s.shaping = shaping;
  s.topology = topology;
  s.intra_busy_until = s.inter_busy_until = Clock::now();
  s.enabled = shaping.intra_gbps > 0 || shaping.inter_gbps > 0;
}

void disable_link_shaping() {
  Shaper& s = shaper();
  std::lock_guard lock(s.mutex);
  s.enabled = false;
}

std::optional<LinkShaping> link_shaping() {
  Shaper& s = shaper();
  std::lock_guard lock(s.mutex);
  if (!s.enabled) return std::nullopt;
  return s.shaping;
}

void shape_send(int peer, std::int64_t bytes) {
  Shaper& s = shaper();
  if (!s.enabled.load(std::memory_order_relaxed) || bytes <= 0) return;
  Clock::time_point done;
  {
    std::lock_guard lock(s.mutex);
    const bool intra = s.topology->same_node(world_rank(), peer);
    const double gbps = intra ? s.shaping.intra_gbps : s.shaping.inter_gbps;
    if (gbps <= 0) return;
    Clock::time_point& busy_until = intra ? s.intra_busy_until : s.inter_busy_until;
    const auto duration = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bytes / (gbps * 1e9)));
    done = std::max(Clock::now(), busy_until) + duration;
    busy_until = done;
  }
  std::this_thread::sleep_until(done);
}

}  // namespace loom::comm
