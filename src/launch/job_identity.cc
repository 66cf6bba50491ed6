#include "launch/job_identity.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "launch/launch_error.h"

namespace dtrain::launch {

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw LaunchError::runtime(fmt::format("cannot open /dev/urandom: {}", std::strerror(errno)));
  }
  size_t filled = 0;
  while (filled < bytes) {
    ssize_t n = ::read(fd, buffer.data() + filled, bytes - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      throw LaunchError::runtime(fmt::format("cannot read /dev/urandom: {}", std::strerror(err)));
    }
    filled += static_cast<size_t>(n);
  }
  ::close(fd);

  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes * 2);
  for (unsigned char b : buffer) {
    hex += kDigits[b >> 4];
    hex += kDigits[b & 0xf];
  }
  return hex;
}

JobIdentity JobIdentity::generate() { return JobIdentity{random_hex(16), random_hex(4)}; }

}  // namespace dtrain::launch
