#include "tests/launch/child_runner.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "launch/worker_env.h"

namespace dtrain::launch::testing {
namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

ChildRunner::ChildRunner(std::vector<std::string> argv, std::vector<std::string> extra_env, bool stdin_pipe) {
  std::vector<std::string> env = current_environment();
  EnvVars overrides;
  for (const auto& e : extra_env) {
    size_t eq = e.find('=');
    overrides.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  started_ = now_s();
  child_ = spawn_child(SpawnRequest{std::move(argv), merge_environment(env, overrides), stdin_pipe});
}

ChildRunner::~ChildRunner() {
  if (!reaped_ && child_.pid > 0) {
    ::killpg(child_.pid, SIGKILL);
    ::waitpid(child_.pid, nullptr, 0);
  }
  close_fd(child_.stdout_fd);
  close_fd(child_.stderr_fd);
  close_fd(child_.stdin_fd);
}

bool ChildRunner::pump(int timeout_ms) {
  pollfd fds[2];
  int n = 0;
  int* owners[2];
  if (child_.stdout_fd >= 0) {
    fds[n] = {child_.stdout_fd, POLLIN, 0};
    owners[n++] = &child_.stdout_fd;
  }
  if (child_.stderr_fd >= 0) {
    fds[n] = {child_.stderr_fd, POLLIN, 0};
    owners[n++] = &child_.stderr_fd;
  }
  if (n == 0) return false;
  if (::poll(fds, n, timeout_ms) <= 0) return true;
  char buffer[65536];
  for (int i = 0; i < n; ++i) {
    if (fds[i].revents == 0) continue;
    int& fd = *owners[i];
    std::string& sink = (&fd == &child_.stdout_fd) ? result_.out : result_.err;
    ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      sink.append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
      close_fd(fd);
    }
  }
  return true;
}

bool ChildRunner::wait_for_stdout(const std::string& needle, double timeout_s, int count) {
  double deadline = now_s() + timeout_s;
  auto occurrences = [&] {
    int found = 0;
    for (size_t pos = result_.out.find(needle); pos != std::string::npos; pos = result_.out.find(needle, pos + 1)) {
      ++found;
    }
    return found;
  };
  while (occurrences() < count) {
    double left = deadline - now_s();
    if (left <= 0) return false;
    if (!pump(static_cast<int>(left * 1000) + 1)) return occurrences() >= count;
  }
  return true;
}

void ChildRunner::signal(int sig) { ::kill(child_.pid, sig); }

void ChildRunner::close_stdin() { close_fd(child_.stdin_fd); }

ChildResult ChildRunner::finish(double timeout_s) {
  double deadline = now_s() + timeout_s;
  while (child_.stdout_fd >= 0 || child_.stderr_fd >= 0) {
    double left = deadline - now_s();
    if (left <= 0) {
      result_.timed_out = true;
      ::killpg(child_.pid, SIGKILL);
      break;
    }
    pump(static_cast<int>(left * 1000) + 1);
  }
  int status = 0;
  while (true) {
    pid_t r = ::waitpid(child_.pid, &status, WNOHANG);
    if (r == child_.pid) break;
    if (r < 0 && errno != EINTR) break;
    if (now_s() > deadline + 0.5) {
      result_.timed_out = true;
      ::killpg(child_.pid, SIGKILL);
      ::waitpid(child_.pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  reaped_ = true;
  result_.seconds = now_s() - started_;
  result_.exited = WIFEXITED(status);
  result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result_.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result_;
}

int processes_with_marker(const std::string& marker) {
  int found = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  pid_t self = ::getpid();
  while (dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    std::ifstream in(std::string("/proc/") + entry->d_name + "/cmdline", std::ios::binary);
    std::stringstream cmdline;
    cmdline << in.rdbuf();
    // Zombies have an empty cmdline; they hold nothing but are reaped by now anyway.
    if (cmdline.str().find(marker) != std::string::npos) ++found;
  }
  ::closedir(proc);
  return found;
}

int wait_for_no_marker(const std::string& marker, double timeout_s) {
  double deadline = now_s() + timeout_s;
  int left = processes_with_marker(marker);
  while (left > 0 && now_s() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = processes_with_marker(marker);
  }
  return left;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace dtrain::launch::testing
