#include "launch/local_spawner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "launch/launch_error.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace dtrain::launch {
namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;

  void open_or_throw(const char* what) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw LaunchError::runtime(fmt::format("cannot create {} pipe: {}", what, std::strerror(errno)));
    }
    read_end = fds[0];
    write_end = fds[1];
  }
  void close_both() {
    close_fd(read_end);
    close_fd(write_end);
  }
};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(pid_t launcher, const Pipe& out, const Pipe& err, const Pipe& in, bool stdin_pipe,
                             int error_fd, char* const* argv, char* const* envp) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(127);  // launcher already gone

  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT}) ::signal(sig, SIG_DFL);
  // The launcher passes SIGUSR1 on (a request for the ranks' flight records): a rank whose
  // runtime has not yet put its handler in place would die of it. The runtime replaces this.
  ::signal(SIGUSR1, SIG_IGN);

  int stdin_fd = stdin_pipe ? in.read_end : ::open("/dev/null", O_RDONLY);
  if (stdin_fd < 0 || ::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(out.write_end, STDOUT_FILENO) < 0 ||
      ::dup2(err.write_end, STDERR_FILENO) < 0) {
    int e = errno;
    [[maybe_unused]] ssize_t n = ::write(error_fd, &e, sizeof(e));
    ::_exit(127);
  }
  // Nothing else the launcher holds (sockets, other workers' pipes) leaks in.
  ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);

  ::execvpe(argv[0], argv, envp);
  int e = errno;
  [[maybe_unused]] ssize_t n = ::write(error_fd, &e, sizeof(e));
  ::_exit(127);
}

}  // namespace

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

SpawnedChild spawn_child(const SpawnRequest& request) {
  if (request.argv.empty()) throw LaunchError::usage("missing command");

  Pipe out, err, in, exec_error;
  try {
    out.open_or_throw("stdout");
    err.open_or_throw("stderr");
    if (request.stdin_pipe) in.open_or_throw("stdin");
    exec_error.open_or_throw("exec status");
  } catch (...) {
    out.close_both();
    err.close_both();
    in.close_both();
    exec_error.close_both();
    throw;
  }

  // Built before fork: the child must not allocate.
  std::vector<char*> argv = c_strings(request.argv);
  std::vector<char*> envp = c_strings(request.env);
  pid_t launcher = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    out.close_both();
    err.close_both();
    in.close_both();
    exec_error.close_both();
    throw LaunchError::runtime(fmt::format("cannot fork: {}", std::strerror(e)));
  }
  if (pid == 0) {
    exec_child(launcher, out, err, in, request.stdin_pipe, exec_error.write_end, argv.data(), envp.data());
  }

  // Also set here, so the group exists before we might signal it.
  ::setpgid(pid, pid);
  close_fd(out.write_end);
  close_fd(err.write_end);
  close_fd(in.read_end);
  close_fd(exec_error.write_end);

  SpawnedChild child;
  child.pid = pid;
  child.stdout_fd = out.read_end;
  child.stderr_fd = err.read_end;
  child.stdin_fd = in.write_end;

  // EOF without data: exec succeeded (the pipe was close-on-exec).
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(exec_error.read_end, &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close_fd(exec_error.read_end);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) child.exec_errno = child_errno;

  for (int fd : {child.stdout_fd, child.stderr_fd}) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return child;
}

}  // namespace dtrain::launch
