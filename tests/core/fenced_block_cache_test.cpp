// FencedBlockCache (core/fenced_block_cache.h), the reuse rule of pinned host staging, with fences
// the test opens by hand in place of CUDA events: a freed block is handed out again only once its
// fence has passed, only for its exact size, and trimming to the limit never releases a block
// whose fence is still closed.
#include <catch2/catch.hpp>

#include <memory>
#include <set>

#include <loom/core/fenced_block_cache.h>

using namespace loom;

namespace {
// A fence the test opens; a copy of it sees the same state.
struct HandFence {
  std::shared_ptr<bool> open = std::make_shared<bool>(false);
  FencedBlockCache::Fence fence() const {
    return [state = open] { return *state; };
  }
};

char blocks[8][64];
void* block(int i) { return blocks[i]; }
}  // namespace

TEST_CASE("a freed block is reused only after its fence passed, and only for its size", "[memory][pinned]") {
  std::set<void*> released;
  FencedBlockCache cache(1 << 20, [&](void* b) { released.insert(b); });
  HandFence copy_in_flight;
  CHECK(cache.give_back(block(0), 4096, copy_in_flight.fence()) == 0);
  CHECK(cache.cached_bytes() == 4096);
  CHECK(cache.take(4096) == nullptr);  // the device may still read it
  *copy_in_flight.open = true;
  CHECK(cache.take(8192) == nullptr);  // another size
  CHECK(cache.take(4096) == block(0));
  CHECK(cache.take(4096) == nullptr);  // handed out once
  CHECK(cache.cached_bytes() == 0);

  // An empty fence: nothing was queued on the block.
  cache.give_back(block(1), 4096, {});
  CHECK(cache.take(4096) == block(1));

  // Of two blocks of one size, the one whose fence passed, whatever the order they came back in.
  HandFence first, second;
  cache.give_back(block(2), 4096, first.fence());
  cache.give_back(block(3), 4096, second.fence());
  *second.open = true;
  CHECK(cache.take(4096) == block(3));
  CHECK(cache.take(4096) == nullptr);
  CHECK(released.empty());
  CHECK(cache.release(false) == 0);  // block 2 is still fenced
  *first.open = true;
  CHECK(cache.release(false) == 4096);
  CHECK(released == std::set<void*>{block(2)});
  CHECK(cache.cached_bytes() == 0);
}

TEST_CASE("past its limit the cache releases passed blocks, oldest first, never fenced ones", "[memory][pinned]") {
  std::vector<void*> released;
  FencedBlockCache cache(8192, [&](void* b) { released.push_back(b); });
  HandFence pending, done;
  *done.open = true;
  cache.give_back(block(0), 4096, pending.fence());
  cache.give_back(block(1), 4096, done.fence());
  CHECK(cache.give_back(block(2), 4096, done.fence()) == 4096);  // 12 KiB > 8 KiB: block 1 goes
  CHECK(released == std::vector<void*>{block(1)});
  CHECK(cache.give_back(block(3), 4096, pending.fence()) == 4096);  // block 2 goes, block 0 stays
  CHECK(released == std::vector<void*>{block(1), block(2)});
  CHECK(cache.cached_bytes() == 8192);
  CHECK(cache.give_back(block(4), 4096, pending.fence()) == 0);  // all fenced: over the limit for now
  CHECK(cache.cached_bytes() == 12288);
  CHECK(cache.release(true) == 12288);  // the caller drained the device
  CHECK(released.size() == 5);
  CHECK(cache.cached_bytes() == 0);
}

// After a kernel fault the CUDA backend cannot record or query a fence, and gives the block back
// with one that never passes (cuda_pinned.cpp): such a block is never handed out again, and
// neither give_back (a tensor's destructor) nor trimming to the limit throws or releases it.
TEST_CASE("a block whose fence never passes is held, never reused", "[memory][pinned]") {
  std::set<void*> released;
  FencedBlockCache cache(4096, [&](void* b) { released.insert(b); });
  const FencedBlockCache::Fence never = [] { return false; };
  CHECK_NOTHROW(cache.give_back(block(3), 4096, never));
  CHECK_NOTHROW(cache.give_back(block(4), 4096, never));  // over the limit: nothing can be released
  CHECK(cache.take(4096) == nullptr);
  CHECK(cache.release(false) == 0);
  CHECK(released.empty());
  CHECK(cache.cached_bytes() == 8192);
}
