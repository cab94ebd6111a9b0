// loom::Error and the one set of check macros used everywhere.
//
// Library code never exits or aborts: it throws loom::Error carrying what went wrong and where
// (file:line, and the MPI rank once known). Apps catch it at main, print one line and abort all
// ranks. Return codes of CUDA, cuBLAS, cuDNN, NCCL and MPI are checked by the LOOM_*_CHECK macros
// below; they expand at the call site, so this header needs none of those libraries. Everything
// here is inline: modules that do not link loom::core (schedule, planner) use it as it is.
#pragma once

#include <atomic>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace loom {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A failed MPI or NCCL call (a peer's connection lost, a transport failing): not the input's
// fault, so the loom executable exits with 3 for it, as for the watchdog (a restart may help),
// where other errors exit with 1 (scripts/cluster/elastic.sh tells them apart by that).
class CommunicationError : public Error {
 public:
  using Error::Error;
};

namespace detail {
inline std::atomic<int>& error_rank_slot() {
  static std::atomic<int> rank{-1};
  return rank;
}

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

// "message [file.cpp:42, rank 3]": where the check is, and which rank failed once MPI is up.
inline std::string located(const char* file, int line, const std::string& message) {
  const char* base = std::strrchr(file, '/');
  std::ostringstream out;
  out << message << " [" << (base ? base + 1 : file) << ":" << line;
  if (const int rank = error_rank_slot().load(); rank >= 0) out << ", rank " << rank;
  out << "]";
  return out.str();
}
[[noreturn]] inline void throw_error(const char* file, int line, const std::string& message) {
  throw Error(located(file, line, message));
}
[[noreturn]] inline void throw_communication_error(const char* file, int line, const std::string& message) {
  throw CommunicationError(located(file, line, message));
}
}  // namespace detail

// User text quoted in an error message: at most `most` characters, cut with "..." (a 10 MB token
// or line must not come back whole).
inline std::string excerpt(std::string_view text, std::size_t most = 80) {
  if (text.size() <= most) return std::string(text);
  return std::string(text.substr(0, most)) + "...";
}

// The rank stamped on error messages and log lines; -1 until MPI (or the app) sets it.
inline void set_error_rank(int rank) { detail::error_rank_slot() = rank; }
inline int error_rank() { return detail::error_rank_slot().load(); }

}  // namespace loom

// LOOM_CHECK(cond, "message", parts...) throws loom::Error when cond is false.
#define LOOM_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) ::loom::detail::throw_error(__FILE__, __LINE__, ::loom::detail::concat(__VA_ARGS__)); \
  } while (0)

#define LOOM_THROW(...) ::loom::detail::throw_error(__FILE__, __LINE__, ::loom::detail::concat(__VA_ARGS__))
// A CommunicationError: a failed MPI or NCCL call.
#define LOOM_THROW_COMMUNICATION(...) \
  ::loom::detail::throw_communication_error(__FILE__, __LINE__, ::loom::detail::concat(__VA_ARGS__))

#define LOOM_CUDA_CHECK(expr)                                                                   \
  do {                                                                                          \
    auto loom_status_ = (expr);                                                                 \
    if (loom_status_ != cudaSuccess)                                                            \
      LOOM_THROW("CUDA error ", cudaGetErrorName(loom_status_), " (", cudaGetErrorString(loom_status_), \
                 ") in ", #expr);                                                               \
  } while (0)

#define LOOM_CUBLAS_CHECK(expr)                                                         \
  do {                                                                                  \
    auto loom_status_ = (expr);                                                         \
    if (loom_status_ != CUBLAS_STATUS_SUCCESS)                                          \
      LOOM_THROW("cuBLAS error ", cublasGetStatusString(loom_status_), " in ", #expr);  \
  } while (0)

#define LOOM_CUDNN_CHECK(expr)                                                        \
  do {                                                                                \
    auto loom_status_ = (expr);                                                       \
    if (loom_status_ != CUDNN_STATUS_SUCCESS)                                         \
      LOOM_THROW("cuDNN error ", cudnnGetErrorString(loom_status_), " in ", #expr);   \
  } while (0)

#define LOOM_NCCL_CHECK(expr)                                                         \
  do {                                                                                \
    auto loom_status_ = (expr);                                                       \
    if (loom_status_ != ncclSuccess)                                                  \
      LOOM_THROW_COMMUNICATION("NCCL error ", ncclGetErrorString(loom_status_), " in ", #expr); \
  } while (0)

#define LOOM_MPI_CHECK(expr)                                                          \
  do {                                                                                \
    int loom_status_ = (expr);                                                        \
    if (loom_status_ != MPI_SUCCESS) {                                                \
      char loom_mpi_msg_[MPI_MAX_ERROR_STRING];                                       \
      int loom_mpi_len_ = 0;                                                          \
      MPI_Error_string(loom_status_, loom_mpi_msg_, &loom_mpi_len_);                  \
      LOOM_THROW_COMMUNICATION("MPI error ", std::string(loom_mpi_msg_, loom_mpi_len_), " in ", #expr); \
    }                                                                                 \
  } while (0)
