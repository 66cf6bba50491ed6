#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace dtrain::launch {

// What to start: argv[0] is looked up in PATH; `env` is the complete
// environment ("K=V"). With `stdin_pipe` the child's stdin is a pipe whose
// write end the caller keeps (ssh workers: closing it ends the remote
// command); otherwise stdin is /dev/null.
struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::string> env;
  bool stdin_pipe = false;
};

// A started child. The read ends of stdout/stderr are non-blocking and
// close-on-exec. exec_errno != 0 means exec failed: the child has already
// exited (status 127) and still has to be reaped.
struct SpawnedChild {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int stdin_fd = -1;
  int exec_errno = 0;
};

// fork/exec with pipes. The child gets its own process group (so signals
// reach everything it starts), PR_SET_PDEATHSIG(SIGKILL) (so a launcher that
// dies leaves no orphans), an empty signal mask and default dispositions.
// Throws LaunchError (runtime) when pipes or fork fail.
SpawnedChild spawn_child(const SpawnRequest& request);

// Closes `fd` if it is open and sets it to -1.
void close_fd(int& fd);

// What a shell would report for a waitpid() status: the exit status, or 128 + the signal
// that killed the process.
int exit_code_of(int wait_status);

}  // namespace dtrain::launch
