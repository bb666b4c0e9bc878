// profiler/common/atomic_file.cpp: see atomic_file.h.
#include "profiler/common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "profiler/common/config_error.h"

namespace ladder {

namespace fs = std::filesystem;

namespace {
[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw std::runtime_error(fmt::format("{} '{}': {}", what, path, std::strerror(errno)));
}
// Removes `tmp` after a failure, keeping the errno that explains the failure.
void discard(const std::string& tmp) {
  const int err = errno;
  ::unlink(tmp.c_str());
  errno = err;
}
// Renames a flushed temporary file over `path`, then fsyncs the directory so
// the rename itself survives a crash.
void rename_into_place(const std::string& tmp, const std::string& path) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    discard(tmp);
    fail("cannot rename into place", path);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}
}  // namespace

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", tmp);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("cannot write", tmp);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    fail("cannot flush", tmp);
  }
  rename_into_place(tmp, path);
}

void commit_file_atomically(const std::string& tmp_path, const std::string& path) {
  const int fd = ::open(tmp_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    discard(tmp_path);
    fail("cannot open", tmp_path);
  }
  if (::fsync(fd) != 0) {
    discard(tmp_path);
    ::close(fd);
    fail("cannot flush", tmp_path);
  }
  ::close(fd);
  rename_into_place(tmp_path, path);
}

void ensure_writable_dir(const std::string& dir, const char* option) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw ConfigError(fmt::format("{}: cannot create directory '{}': {}; expected a writable path",
                                  option, dir, ec.message()));
  if (!fs::is_directory(dir))
    throw ConfigError(fmt::format("{}: '{}' is not a directory", option, dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(fmt::format("{}: directory '{}' is not writable: {}", option, dir,
                                  std::strerror(errno)));
}

}  // namespace ladder
