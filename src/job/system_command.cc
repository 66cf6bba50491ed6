#include "job/system_command.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "job/job_error.h"
#include "launch/local_spawner.h"
#include "launch/worker_env.h"

namespace dtrain::job {

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult result;
  launch::SpawnedChild child;
  try {
    child = launch::spawn_child(launch::SpawnRequest{argv, launch::current_environment(), false});
  } catch (const std::exception& e) {
    result.output = e.what();
    return result;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool killed = false;
  char buffer[8192];
  while (child.stdout_fd >= 0 || child.stderr_fd >= 0) {
    pollfd fds[2] = {{child.stdout_fd, POLLIN, 0}, {child.stderr_fd, POLLIN, 0}};
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 && !killed) {
      ::killpg(child.pid, SIGKILL);
      killed = true;
    }
    ::poll(fds, 2, left > 0 ? static_cast<int>(std::min<long long>(left, 1000)) : 100);
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? child.stdout_fd : child.stderr_fd;
      if (fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n > 0) {
        result.output.append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        launch::close_fd(fd);
      }
    }
  }
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {}
  result.exit_code = launch::exit_code_of(status);
  if (child.exec_errno != 0) result.exit_code = -1;
  return result;
}

std::string run_command_or_throw(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r = run_command(argv, timeout_s);
  if (!r.ok()) {
    std::string output = r.output;
    while (!output.empty() && output.back() == '\n') output.pop_back();
    throw JobError::runtime(fmt::format("'{}' failed (exit {}): {}", fmt::join(argv, " "), r.exit_code, output));
  }
  return r.output;
}

}  // namespace dtrain::job
