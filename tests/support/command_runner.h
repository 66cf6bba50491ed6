// Test helpers that run shell commands: whole `dtrain run` jobs with a time limit and merged
// output, and CLI invocations whose stdout and stderr are checked apart.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <sstream>
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

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CommandOutcome {
  int exit_code = -1;
  std::string out, err;
};

// Runs `command` with stdout and stderr sent to files in `scratch_dir`, and returns both.
inline CommandOutcome run_capturing(const std::string& command, const std::string& scratch_dir) {
  const std::string out = scratch_dir + "/stdout", err = scratch_dir + "/stderr";
  const int status = std::system((command + " >" + out + " 2>" + err).c_str());
  CommandOutcome o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = read_file(out);
  o.err = read_file(err);
  return o;
}

}  // namespace dtrain::testing
