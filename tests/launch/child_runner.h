#pragma once

// Test helper: runs a child process through spawn_child(), collects its
// stdout and stderr, and bounds every wait so a hung child fails the test
// instead of hanging it.

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch/local_spawner.h"

namespace dtrain::launch::testing {

struct ChildResult {
  bool exited = false;  // false: killed by a signal (or by the timeout)
  int exit_code = -1;   // when exited
  int signal = 0;       // when killed
  bool timed_out = false;
  double seconds = 0;
  std::string out;
  std::string err;
};

class ChildRunner {
 public:
  ChildRunner(std::vector<std::string> argv, std::vector<std::string> extra_env = {}, bool stdin_pipe = false);
  ~ChildRunner();

  pid_t pid() const { return child_.pid; }
  int exec_errno() const { return child_.exec_errno; }

  // Reads output until `needle` has appeared `count` times in stdout or the
  // timeout passes; true when it appeared.
  bool wait_for_stdout(const std::string& needle, double timeout_s, int count = 1);

  void signal(int sig);
  void close_stdin();

  // Reads until the child exits and its pipes close; SIGKILLs its process
  // group after `timeout_s`.
  ChildResult finish(double timeout_s);

  const std::string& out() const { return result_.out; }

 private:
  bool pump(int timeout_ms);

  SpawnedChild child_;
  ChildResult result_;
  double started_ = 0;
  bool reaped_ = false;
};

// Processes whose command line contains `marker` (other than this one).
int processes_with_marker(const std::string& marker);

// Waits up to `timeout_s` for processes_with_marker() to reach zero.
int wait_for_no_marker(const std::string& marker, double timeout_s);

std::vector<std::string> lines_of(const std::string& text);

}  // namespace dtrain::launch::testing
