// Runs a shell command with a time limit and returns its exit status and merged output,
// for tests that drive whole `dtrain run` jobs.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace dtrain::testing {

struct JobResult {
  int exit_code = -1;
  std::string output;
};

inline JobResult run_job(const std::string& command, int timeout_seconds = 120) {
  const std::string wrapped = "timeout -k 5 " + std::to_string(timeout_seconds) + " " + command + " 2>&1";
  JobResult result;
  FILE* pipe = popen(wrapped.c_str(), "r");
  if (!pipe) return result;
  std::array<char, 4096> buffer;
  std::size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace dtrain::testing
