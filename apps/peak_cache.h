// The GEMM peak that MFU is measured against, measured once per machine and build and kept in a
// small JSON file, so that the MFU of a job does not move with the load of the second it started
// (the same job printed 25% and then 11% when each start measured its own).
//
// The file: $LOOM_CACHE_DIR/peak-gflops.json, else $XDG_CACHE_HOME/loom/..., else
// $HOME/.cache/loom/...; an object from a key (the operand type, the threads, the CPU model and
// `loom --version`'s line: a new build or another machine measures again) to {"gflops": G}. Delete
// the file, or give --peak-gflops, to measure or set it again. Reading and writing are best effort:
// a missing, unreadable or damaged file means "measure", a failed write means "not cached".
#pragma once

#include <optional>
#include <string>

#include <loom/core/dtype.h>

namespace loom::apps {

std::string peak_cache_path();  // empty when no directory is known (no HOME)
std::string peak_cache_key(DType operands, int threads);
std::optional<double> cached_peak(const std::string& path, const std::string& key);
bool store_peak(const std::string& path, const std::string& key, double gflops);  // false: not written

}  // namespace loom::apps
