// Files read and written with errors that name the file and the operating system's reason.
//
// Inputs (checkpoints, their manifests) must be regular files: opening a FIFO waits for a writer
// forever, a device such as /dev/zero never ends, and a directory reads as nothing, so each is
// refused by name before it is opened. Outputs that must never be seen half-written go through
// AtomicFile: written under PATH.tmp, flushed to the disk (fsync), then renamed to PATH; on any
// failure (a full disk: "No space left on device") the error names the file and the reason and
// the .tmp is removed, so PATH keeps its previous content. Header-only like error.h, so modules
// that do not link loom::core can use it.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <loom/base/error.h>

namespace loom {

// "a FIFO", "a directory", ...: what a path that is not a regular file is.
inline const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Throws unless `path` names a regular file (after symbolic links); `what` says what it should
// hold ("a checkpoint manifest").
inline void check_regular_file(const std::string& path, const char* what) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    LOOM_THROW(path, ": cannot open ", what, " (", std::strerror(error), ")");
  }
  LOOM_CHECK(S_ISREG(info.st_mode), path, ": ", what, " must be a regular file, but this is ", file_kind(info.st_mode));
}

// Makes a rename inside `directory` durable (its entry is on the disk, not only the file's data).
inline void sync_directory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some file systems cannot open a directory
  ::fsync(fd);
  ::close(fd);
}

namespace detail {
// Test-only hook (docs/reliability.md): when LOOM_TEST_PAUSE_BEFORE_RENAME is a part of a path
// being committed, the process says so on stderr and sleeps before the rename, so that a fault
// test can kill or stop it while the file exists only as PATH.tmp.
inline void test_pause_before_rename(const std::string& path) {
  const char* pattern = std::getenv("LOOM_TEST_PAUSE_BEFORE_RENAME");
  if (!pattern || !*pattern || path.find(pattern) == std::string::npos) return;
  std::fprintf(stderr, "loom: test hook: rank %d pid %ld paused before renaming %s.tmp (LOOM_TEST_PAUSE_BEFORE_RENAME)\n",
               error_rank(), static_cast<long>(::getpid()), path.c_str());
  std::fflush(stderr);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}
}  // namespace detail

// A file written under PATH.tmp and moved to PATH by commit(); destroyed uncommitted, it removes
// PATH.tmp. Every failure names the file and the OS reason.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : path_(std::move(path)), temporary_(path_ + ".tmp") {
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot open for writing");
  }
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temporary_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes) {
    const char* next = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t written = ::write(fd_, next, bytes);
      if (written < 0 && errno == EINTR) continue;
      if (written <= 0) fail("cannot write");
      next += written;
      bytes -= static_cast<std::size_t>(written);
    }
  }
  void write(std::string_view text) { write(text.data(), text.size()); }

  // Flushes the data to the disk, closes, and renames PATH.tmp to PATH.
  void commit() {
    if (::fsync(fd_) != 0 && errno != EINVAL) fail("cannot flush to the disk");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot close");
    detail::test_pause_before_rename(path_);
    if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
      const int error = errno;
      LOOM_THROW(path_, ": cannot move the written file into place (", std::strerror(error), ")");
    }
    committed_ = true;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    const int error = errno;
    LOOM_THROW(temporary_, ": ", what, " (", std::strerror(error), ")");
  }

  std::string path_, temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `text` as PATH, atomically (see AtomicFile).
inline void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

}  // namespace loom
