#include "launch/raw_output_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "launch/launch_error.h"

namespace dtrain::launch {
namespace {

int open_truncated(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw LaunchError::runtime(fmt::format("--output-filename: cannot create '{}': {}", path, std::strerror(errno)));
  }
  return fd;
}

}  // namespace

RawOutputFiles::RawOutputFiles(const std::string& dir, int rank) {
  std::string rank_dir = fmt::format("{}/rank.{}", dir, rank);
  std::error_code ec;
  std::filesystem::create_directories(rank_dir, ec);
  if (ec) {
    throw LaunchError::runtime(
        fmt::format("--output-filename: cannot create directory '{}': {}", rank_dir, ec.message()));
  }
  stdout_fd_ = open_truncated(rank_dir + "/stdout");
  try {
    stderr_fd_ = open_truncated(rank_dir + "/stderr");
  } catch (...) {
    ::close(stdout_fd_);
    throw;
  }
}

RawOutputFiles::~RawOutputFiles() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (stderr_fd_ >= 0) ::close(stderr_fd_);
}

void RawOutputFiles::write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // disk full or similar: the prefixed copy still reaches the terminal
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace dtrain::launch
