#include "launch/ssh_reachability.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "launch/launch_error.h"
#include "launch/local_spawner.h"
#include "launch/worker_env.h"

namespace dtrain::launch {
namespace {

using Clock = std::chrono::steady_clock;

struct Probe {
  std::string host;
  SpawnedChild child;
  std::string errors;  // ssh's stderr
  std::optional<int> status;
  bool timed_out = false;
};

std::string last_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  size_t start = text.find_last_of('\n');
  std::string line = start == std::string::npos ? text : text.substr(start + 1);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

std::string describe_failure(const Probe& p) {
  if (p.child.exec_errno != 0) {
    return fmt::format("cannot reach host {}: cannot execute 'ssh': {}", p.host, std::strerror(p.child.exec_errno));
  }
  if (p.timed_out) return fmt::format("cannot reach host {}: ssh did not finish in time", p.host);
  std::string why = last_line(p.errors);
  if (why.empty()) why = fmt::format("ssh exited with status {}", *p.status);
  return fmt::format("cannot reach host {} over ssh: {}", p.host, why);
}

// Runs one batch of probes to completion.
void run_batch(std::vector<Probe>& batch, double timeout_s) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  char buffer[4096];
  while (true) {
    std::vector<pollfd> fds;
    std::vector<Probe*> owners;
    for (auto& p : batch) {
      for (int fd : {p.child.stdout_fd, p.child.stderr_fd}) {
        if (fd >= 0) {
          fds.push_back({fd, POLLIN, 0});
          owners.push_back(&p);
        }
      }
    }
    if (fds.empty()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      for (auto& p : batch) {
        if (p.child.stdout_fd >= 0 || p.child.stderr_fd >= 0) {
          p.timed_out = true;
          ::killpg(p.child.pid, SIGKILL);
          close_fd(p.child.stdout_fd);
          close_fd(p.child.stderr_fd);
        }
      }
      break;
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(left.count())) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Probe& p = *owners[i];
      int& fd = fds[i].fd == p.child.stdout_fd ? p.child.stdout_fd : p.child.stderr_fd;
      ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n > 0) {
        if (fd == p.child.stderr_fd && p.errors.size() < 64 * 1024) p.errors.append(buffer, n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(fd);
      }
    }
  }
  for (auto& p : batch) {
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(p.child.pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r == p.child.pid) p.status = exit_code_of(status);
  }
}

}  // namespace

void require_ssh_reachable(const std::vector<std::string>& hosts, const SshOptions& options, int max_parallel,
                           double timeout_s) {
  std::vector<std::string> env = current_environment();
  size_t step = static_cast<size_t>(std::max(1, max_parallel));
  for (size_t begin = 0; begin < hosts.size(); begin += step) {
    std::vector<Probe> batch;
    for (size_t i = begin; i < std::min(hosts.size(), begin + step); ++i) {
      Probe p;
      p.host = hosts[i];
      p.child = spawn_child(SpawnRequest{ssh_probe_argv(hosts[i], options), env, false});
      batch.push_back(std::move(p));
    }
    run_batch(batch, timeout_s);
    for (const auto& p : batch) {
      if (p.child.exec_errno != 0 || p.timed_out || p.status != 0) {
        throw LaunchError::runtime(describe_failure(p));
      }
    }
  }
}

}  // namespace dtrain::launch
