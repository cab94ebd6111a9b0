// A thread-safe map from a string key to a cheap-to-copy value (a handle), built on first use and
// bounded: past `kMaxEntries` it starts again empty. Used for library primitives (oneDNN's) whose
// construction costs tens of microseconds, more than a small call's work.
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace loom {

template <typename Entry>
class BoundedCache {
 public:
  // The entry for `key`, made by make() when absent (under the lock: makers run one at a time).
  template <typename Make>
  Entry get(const std::string& key, Make make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxEntries) entries_.clear();
      it = entries_.emplace(key, make()).first;
    }
    return it->second;
  }

 private:
  static constexpr std::size_t kMaxEntries = 512;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace loom
