// A rank of a job that hangs in one of the ways the flight recorder's verdict tells apart
// (job_test.cc runs it under `dtrain run -np 2`): argv[1] names the way.
//   skip:      rank 1 skips allreduce 'step.b' and goes on to 'step.c'
//   user-code: rank 1 stays in its own code after 'step.a' while rank 0 waits on 'step.b'
//   order:     rank 0 reduces 'x' then 'y', rank 1 'y' then 'x'
//   signal:    as user-code, until the file argv[2]/release exists; rank 0 creates
//              argv[2]/waiting once it waits on 'step.b' (the test then sends SIGUSR1)
// A stall that ends the job throws out of main: the rank exits with the runtime's error.
#include <chrono>
#include <cstdio>
#include <exception>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "dtrain/dtrain.h"

namespace {

float value = 1;

void reduce(const std::string& name) {
  dtrain::TensorView view{&value, dtrain::DataType::kFloat32, {1}};
  dtrain::allreduce(name, view, view);
}

void wait_for_file(const std::filesystem::path& path) {
  while (!std::filesystem::exists(path)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

int hang(const std::string& way, int argc, char** argv) {
  dtrain::init();
  const int rank = dtrain::rank();
  if (way == "skip") {
    reduce("step.a");
    reduce(rank == 1 ? "step.c" : "step.b");
  } else if (way == "user-code") {
    reduce("step.a");
    if (rank == 1) std::this_thread::sleep_for(std::chrono::hours(1));
    reduce("step.b");
  } else if (way == "order") {
    reduce(rank == 0 ? "x" : "y");
    reduce(rank == 0 ? "y" : "x");
  } else if (way == "signal" && argc > 2) {
    const std::filesystem::path dir = argv[2];
    reduce("step.a");
    if (rank == 1) {
      wait_for_file(dir / "release");
    } else {
      float b = 1;
      dtrain::TensorView view{&b, dtrain::DataType::kFloat32, {1}};
      dtrain::Handle pending = dtrain::allreduce_async("step.b", view, view);
      std::ofstream(dir / "waiting") << "waiting\n";
      pending.wait();
    }
    if (rank == 1) reduce("step.b");
  } else {
    std::fprintf(stderr, "hang_worker: unknown way '%s' (skip, user-code, order, signal DIR)\n", way.c_str());
    return 2;
  }
  dtrain::shutdown();
  return 0;
}

int main(int argc, char** argv) {
  try {
    return hang(argc > 1 ? argv[1] : "", argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hang_worker: %s\n", e.what());
    return 1;
  }
}
