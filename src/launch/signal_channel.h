#pragma once

#include <signal.h>

#include <vector>

namespace dtrain::launch {

// Delivers SIGINT, SIGTERM, SIGHUP, SIGCHLD and SIGUSR1 to the launcher's event loop
// as readable data on a file descriptor (signalfd) instead of as handlers.
// Construct it before any thread starts: the signals are blocked in the
// calling thread and every thread created afterwards inherits the mask.
// Children get an empty mask back in spawn_child(). SIGPIPE is ignored so a
// closed terminal does not kill the launcher.
class SignalChannel {
 public:
  SignalChannel();
  ~SignalChannel();
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  int fd() const { return fd_; }

  // Signals that arrived since the last call, in arrival order (non-blocking).
  std::vector<int> drain();

 private:
  int fd_ = -1;
  sigset_t previous_mask_{};
  struct sigaction previous_pipe_action_ {};
};

// "SIGKILL" for 9; "signal 42" when the number has no name.
const char* signal_name(int sig);

}  // namespace dtrain::launch
