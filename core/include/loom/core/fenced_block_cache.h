// A cache of host blocks that the device may still be reading or writing after their tensor was
// freed. An asynchronous copy from pinned host memory to a GPU returns before the GPU has read the
// block; if the host reused the block at once (the next boundary message, the next data batch),
// the GPU could read the new bytes. So a freed block comes back with a fence (a CUDA event
// recorded on the device's stream when it was freed) and is handed out again only once its fence
// has passed. The fence is a plain callable so that this rule is tested on the CPU
// (tests/core/fenced_block_cache_test.cpp) with fences the test opens by hand; the CUDA backend
// (core/src/cuda/cuda_pinned.cpp) keeps its page-locked blocks here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>

namespace loom {

class FencedBlockCache {
 public:
  using Fence = std::function<bool()>;             // true once the device is done with the block
  using Release = std::function<void(void* block)>;  // gives a block back to the system

  // Blocks are kept while the cache holds at most `limit_bytes`; past it, freed blocks whose fence
  // has passed go back to the system, oldest first (blocks still fenced stay: they are in use).
  FencedBlockCache(std::size_t limit_bytes, Release release);
  ~FencedBlockCache();  // releases every block, waiting for none: call release_all(true) first
  FencedBlockCache(const FencedBlockCache&) = delete;
  FencedBlockCache& operator=(const FencedBlockCache&) = delete;

  // A cached block of exactly `bytes` whose fence has passed, or nullptr (allocate a new one).
  void* take(std::size_t bytes);
  // A block freed by its tensor; `fence` may be empty (nothing pending on it). Returns the bytes
  // given back to the system to keep the cache under its limit.
  std::int64_t give_back(void* block, std::size_t bytes, Fence fence);
  // Gives every block whose fence has passed back to the system (all of them when `all`: the
  // caller has drained the device first). Returns the bytes released.
  std::int64_t release(bool all);
  std::int64_t cached_bytes() const;

 private:
  struct Entry {
    void* block;
    std::size_t bytes;
    Fence fence;
    bool passed() const { return !fence || fence(); }
  };
  // With mutex_ held: gives back blocks, oldest first, while the cache holds more than
  // `keep_bytes` — those whose fence has passed, or every one when `all`. Returns the bytes.
  std::int64_t release_locked(std::int64_t keep_bytes, bool all);

  std::size_t limit_bytes_;
  Release release_;
  mutable std::mutex mutex_;
  std::list<Entry> entries_;  // oldest first
  std::int64_t cached_bytes_ = 0;
};

}  // namespace loom
