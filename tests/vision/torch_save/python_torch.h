// Finding a Python that can import torch, for the tests that compare with
// PyTorch itself.
#pragma once

#include <cstdlib>
#include <string>

#include "tests/support/command_runner.h"

namespace dtrain::vision::torch_save::testing {

// The interpreter to run the fixture scripts with, or "" when none can
// `import torch`. Tried in order: $DTRAIN_PYTHON, python3 on PATH, and
// /usr/bin/python3, because a pyenv or venv python3 found first on PATH
// usually lacks Debian's python3-torch.
inline const std::string& python_with_torch() {
  static const std::string found = [] {
    std::string candidates[3] = {"", "python3", "/usr/bin/python3"};
    if (const char* env = std::getenv("DTRAIN_PYTHON")) candidates[0] = env;
    for (const std::string& python : candidates) {
      if (python.empty()) continue;
      if (dtrain::testing::run_job("'" + python + "' -c 'import torch' >/dev/null", 60).exit_code == 0) return python;
    }
    return std::string();
  }();
  return found;
}

// Runs a fixture script with that interpreter; exit code and merged output.
inline dtrain::testing::JobResult run_python(const std::string& script, const std::string& args) {
  // -B: no __pycache__ in the source tree.
  return dtrain::testing::run_job("'" + python_with_torch() + "' -B '" + script + "' " + args, 110);
}

inline std::string quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace dtrain::vision::torch_save::testing
