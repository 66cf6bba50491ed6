#include "launch/signal_channel.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "launch/launch_error.h"

namespace dtrain::launch {

SignalChannel::SignalChannel() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1}) sigaddset(&mask, sig);
  ::pthread_sigmask(SIG_BLOCK, &mask, &previous_mask_);
  fd_ = ::signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    int e = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
    throw LaunchError::runtime(fmt::format("cannot create signalfd: {}", std::strerror(e)));
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, &previous_pipe_action_);
}

SignalChannel::~SignalChannel() {
  ::close(fd_);
  ::sigaction(SIGPIPE, &previous_pipe_action_, nullptr);
  ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

std::vector<int> SignalChannel::drain() {
  std::vector<int> signals;
  signalfd_siginfo info;
  while (true) {
    ssize_t n = ::read(fd_, &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      signals.push_back(static_cast<int>(info.ssi_signo));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  return signals;
}

const char* signal_name(int sig) {
  static thread_local std::string name;
  const char* abbrev = ::sigabbrev_np(sig);
  name = abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
  return name.c_str();
}

}  // namespace dtrain::launch
