// loom's CPU thread pool: parallel_for cuts a range into chunks of at least `grain` items and runs
// them on loom::num_threads() threads, the caller included, from a pool that lives for the process.
// Small ranges, nested calls and calls made while another thread holds the pool run inline on the
// calling thread. It is the one pool of a loom process: the CPU GEMM splits its work over it too
// (OpenBLAS itself runs single-threaded), so no second pool of threads spins while this one works;
// in a build with oneDNN the pool is the OpenMP team oneDNN's primitives run on (docs/core.md).
#pragma once

#include <cstdint>
#include <functional>

namespace loom {

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& body);

}  // namespace loom
