#include "launch/worker_guardian.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

namespace dtrain::launch {
namespace {

constexpr int kMaxGroups = 4096;
constexpr char kNormalEnd = '.';

void sleep_seconds(double seconds) {
  timespec left{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {}
}

// The guardian's whole life, in the forked child: async-signal-safe calls only.
[[noreturn]] void guard(int socket, double kill_grace_s) {
  setpgid(0, 0);  // the terminal's Ctrl-C reaches the launcher, which stops the workers itself
  signal(SIGINT, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  for (int fd = 3; fd < 1024; ++fd) {
    if (fd != socket) close(fd);  // the launcher's sockets and pipes are not ours to keep open
  }
  pid_t groups[kMaxGroups];
  int count = 0;
  pid_t number = 0;
  char buffer[512];
  for (;;) {
    const ssize_t n = read(socket, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the launcher is gone
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buffer[i];
      if (c == kNormalEnd) _exit(0);
      if (c >= '0' && c <= '9') {
        number = number * 10 + (c - '0');
      } else if (c == '\n') {  // one group id per line
        if (number > 0 && count < kMaxGroups) groups[count++] = number;
        number = 0;
      }
    }
  }
  for (int g = 0; g < count; ++g) kill(-groups[g], SIGTERM);
  // The grace, or less once every group is gone (kill with signal 0 only checks).
  for (double waited = 0; waited < kill_grace_s; waited += 0.05) {
    bool any_left = false;
    for (int g = 0; g < count && !any_left; ++g) any_left = kill(-groups[g], 0) == 0;
    if (!any_left) _exit(0);
    sleep_seconds(0.05);
  }
  for (int g = 0; g < count; ++g) kill(-groups[g], SIGKILL);
  _exit(0);
}

}  // namespace

WorkerGuardian::WorkerGuardian(double kill_grace_s) {
  int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    spdlog::warn("no guardian for the workers' processes (socketpair: {})", std::strerror(errno));
    return;
  }
  pid_ = fork();
  if (pid_ == 0) guard(sockets[1], kill_grace_s);
  close(sockets[1]);
  if (pid_ < 0) {
    spdlog::warn("no guardian for the workers' processes (fork: {})", std::strerror(errno));
    close(sockets[0]);
    return;
  }
  socket_ = sockets[0];
}

WorkerGuardian::~WorkerGuardian() {
  if (socket_ < 0) return;
  const char end = kNormalEnd;
  (void)send(socket_, &end, 1, MSG_NOSIGNAL);
  close(socket_);
  // The launcher's own reaping (waitpid(-1)) may have collected it already.
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {}
}

void WorkerGuardian::watch(pid_t group) {
  if (socket_ < 0) return;
  char line[32];
  const int length = std::snprintf(line, sizeof(line), "%d\n", static_cast<int>(group));
  // A guardian that died takes no message; the launcher goes on (MSG_NOSIGNAL: no SIGPIPE).
  (void)send(socket_, line, static_cast<std::size_t>(length), MSG_NOSIGNAL);
}

}  // namespace dtrain::launch
