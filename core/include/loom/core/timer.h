// Wall-clock time for benchmarks and traces (steady clock, microseconds since process start).
#pragma once

#include <chrono>
#include <cstdint>

namespace loom {

double now_us();

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  void reset() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace loom
