// FencedBlockCache (fenced_block_cache.h): a list of freed host blocks, each handed out again only
// once the device work recorded when it was freed has finished.
#include <loom/core/fenced_block_cache.h>

#include <utility>

namespace loom {

FencedBlockCache::FencedBlockCache(std::size_t limit_bytes, Release release)
    : limit_bytes_(limit_bytes), release_(std::move(release)) {}

FencedBlockCache::~FencedBlockCache() {
  for (Entry& entry : entries_) release_(entry.block);
}

void* FencedBlockCache::take(std::size_t bytes) {
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->bytes == bytes && it->passed()) {
      void* block = it->block;
      cached_bytes_ -= static_cast<std::int64_t>(bytes);
      entries_.erase(it);
      return block;
    }
  return nullptr;
}

std::int64_t FencedBlockCache::give_back(void* block, std::size_t bytes, Fence fence) {
  std::lock_guard lock(mutex_);
  entries_.push_back({block, bytes, std::move(fence)});
  cached_bytes_ += static_cast<std::int64_t>(bytes);
  return release_locked(static_cast<std::int64_t>(limit_bytes_), false);
}

std::int64_t FencedBlockCache::release_locked(std::int64_t keep_bytes, bool all) {
  std::int64_t released = 0;
  for (auto it = entries_.begin(); it != entries_.end() && cached_bytes_ > keep_bytes;)
    if (all || it->passed()) {
      release_(it->block);
      released += static_cast<std::int64_t>(it->bytes);
      cached_bytes_ -= static_cast<std::int64_t>(it->bytes);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  return released;
}

std::int64_t FencedBlockCache::release(bool all) {
  std::lock_guard lock(mutex_);
  return release_locked(0, all);
}

std::int64_t FencedBlockCache::cached_bytes() const {
  std::lock_guard lock(mutex_);
  return cached_bytes_;
}

}  // namespace loom
