#include "job/pipe_feeder.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace dtrain::job {

PipeFeeder::PipeFeeder(std::string data_dir, std::string channel, std::vector<std::string> files)
    : data_dir_(std::move(data_dir)), channel_(std::move(channel)), files_(std::move(files)) {}

PipeFeeder::~PipeFeeder() { stop(); }

std::string PipeFeeder::fifo_path(int epoch) const { return fmt::format("{}/{}_{}", data_dir_, channel_, epoch); }

void PipeFeeder::start() {
  if (thread_.joinable()) return;
  // Epoch 0's FIFO exists before the algorithm starts looking for it.
  ::mkfifo(fifo_path(0).c_str(), 0600);
  thread_ = std::thread([this] { run(); });
}

void PipeFeeder::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

bool PipeFeeder::wait_for_reader(const std::string& path, int& fd) {
  // Opening a FIFO for writing without a reader fails with ENXIO when
  // non-blocking; poll for the reader so stop() is honoured.
  while (!stopping_) {
    fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) return true;
    if (errno != ENXIO && errno != EINTR) {
      error_ = fmt::format("cannot open {}: {}", path, std::strerror(errno));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool PipeFeeder::write_file(int fd, const std::string& file) {
  int in = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) {
    error_ = fmt::format("cannot read {}: {}", file, std::strerror(errno));
    return false;
  }
  char buffer[64 * 1024];
  bool ok = true;
  while (ok && !stopping_) {
    ssize_t n = ::read(in, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t done = 0;
    while (done < static_cast<size_t>(n) && !stopping_) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      if (p.revents & (POLLERR | POLLHUP)) {
        ok = false;  // the reader went away: this epoch is over
        break;
      }
      ssize_t w = ::write(fd, buffer + done, static_cast<size_t>(n) - done);
      if (w < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        ok = false;
        break;
      }
      done += static_cast<size_t>(w);
      bytes_written_ += static_cast<uint64_t>(w);
    }
  }
  ::close(in);
  return ok && !stopping_;
}

void PipeFeeder::run() {
  for (int epoch = 0; !stopping_; ++epoch) {
    std::string path = fifo_path(epoch);
    if (::mkfifo(path.c_str(), 0600) != 0 && errno != EEXIST) {
      error_ = fmt::format("cannot create FIFO {}: {}", path, std::strerror(errno));
      return;
    }
    int fd = -1;
    if (!wait_for_reader(path, fd)) return;
    bool complete = true;
    for (const auto& file : files_) {
      if (!write_file(fd, file)) {
        complete = false;
        break;
      }
    }
    ::close(fd);
    if (complete) ++epochs_completed_;
  }
}

}  // namespace dtrain::job
