#include "runtime/transport/shm/shared_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "dtrain/dtrain.h"
#include "runtime/logging.h"

namespace dtrain::runtime {
namespace {

std::string os_error(const std::string& what, const std::string& name) {
  return "dtrain: " + what + " shared memory segment '" + name + "': " + std::strerror(errno);
}

void* map(int fd, std::size_t bytes, const std::string& name) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) throw Error(os_error("cannot map", name));
  return data;
}

}  // namespace

SharedSegment SharedSegment::create(const std::string& name, std::size_t bytes) {
  const int fd = shm_open(("/" + name).c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw Error(os_error("cannot create", name));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const std::string message = os_error("cannot size", name);
    close(fd);
    shm_unlink(("/" + name).c_str());
    throw Error(message + " (is /dev/shm large enough?)");
  }
  void* data = map(fd, bytes, name);
  close(fd);
  return SharedSegment(name, data, bytes);
}

SharedSegment SharedSegment::open(const std::string& name, std::size_t bytes) {
  const int fd = shm_open(("/" + name).c_str(), O_RDWR, 0600);
  if (fd < 0) throw Error(os_error("cannot open", name));
  void* data = map(fd, bytes, name);
  close(fd);
  SharedSegment segment(name, data, bytes);
  segment.linked_ = false;  // the creator owns the name
  return segment;
}

SharedSegment::SharedSegment(SharedSegment&& other) noexcept { *this = std::move(other); }

SharedSegment& SharedSegment::operator=(SharedSegment&& other) noexcept {
  std::swap(name_, other.name_);
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  std::swap(linked_, other.linked_);
  return *this;
}

SharedSegment::~SharedSegment() {
  unlink();
  if (data_) munmap(data_, size_);
}

void SharedSegment::unlink() {
  if (linked_ && !name_.empty()) shm_unlink(("/" + name_).c_str());
  linked_ = false;
}

int remove_stale_segments() {
  // Names are dtrain-<creator pid>-<job>-...: the pid tells whether its creator still runs.
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(SharedSegment::kNamePrefix, 0) != 0) continue;
    const std::string rest = name.substr(std::strlen(SharedSegment::kNamePrefix));
    const pid_t pid = static_cast<pid_t>(std::atol(rest.c_str()));
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
      if (shm_unlink(("/" + name).c_str()) == 0) {
        ++removed;
        log().info("removed stale shared memory segment /dev/shm/{} (its creator {} is gone)", name, pid);
      }
    }
  }
  return removed;
}

}  // namespace dtrain::runtime
