// main() of the multi-process suites that `dtrain run` starts: every rank joins the job once
// (a failed init is one line and exit 1), runs the tests, and leaves together with the others.
#include <gtest/gtest.h>

#include <cstdio>

#include "dtrain/dtrain.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    dtrain::init();
  } catch (const dtrain::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  const int result = RUN_ALL_TESTS();
  dtrain::shutdown();
  return result;
}
