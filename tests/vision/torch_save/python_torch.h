// Finding a Python that can import torch, for the tests that compare with
// PyTorch itself.
#pragma once

#include <string>

#include "tests/support/command_runner.h"

namespace dtrain::vision::torch_save::testing {

// The interpreter to run the fixture scripts with: the build's Python (DTRAIN_PYTHON, from
// cmake/find_torch.cmake), whose torch holds the LibTorch these tests link.
inline std::string python_with_torch() { return DTRAIN_PYTHON; }

// Runs a fixture script with that interpreter; exit code and merged output.
inline dtrain::testing::JobResult run_python(const std::string& script, const std::string& args) {
  // -B: no __pycache__ in the source tree.
  return dtrain::testing::run_job("'" + python_with_torch() + "' -B '" + script + "' " + args, 110);
}

inline std::string quoted(const std::string& path) { return "'" + path + "'"; }

}  // namespace dtrain::vision::torch_save::testing
