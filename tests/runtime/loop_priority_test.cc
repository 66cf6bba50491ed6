// The background loop's thread yields to the computation where every core computes
// (runtime/loop_priority.h), and only that thread: the threads that compute and wait keep
// their priority.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "dtrain/dtrain.h"
#include "runtime/environment.h"
#include "runtime/loop_priority.h"

namespace dtrain::runtime {
namespace {

RuntimeConfig with_local_size(int local_size, int background_nice = -1) {
  RuntimeConfig config;
  config.local_size = local_size;
  config.background_nice = background_nice;
  return config;
}

int no_gpu() { return 0; }
int one_gpu() { return 1; }

TEST(LoopPriority, LowestWhereTheHostsRanksHaveNoCoreToSpareAndNoGpuUnlessSet) {
  EXPECT_EQ(background_nice(with_local_size(2), 2, no_gpu), 19);
  EXPECT_EQ(background_nice(with_local_size(3), 2, no_gpu), 19);
  EXPECT_EQ(background_nice(with_local_size(1), 1, no_gpu), 19);  // one rank bound to one core
  EXPECT_EQ(background_nice(with_local_size(2), 4, no_gpu), 0);
  EXPECT_EQ(background_nice(with_local_size(2), 2, one_gpu), 0);
  EXPECT_EQ(background_nice(with_local_size(8, 0), 2, no_gpu), 0);
  EXPECT_EQ(background_nice(with_local_size(1, 7), 16, one_gpu), 7);
}

TEST(LoopPriority, UsableCoresAreThisProcesssAffinity) {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  EXPECT_EQ(usable_cores(), CPU_COUNT(&cpus));
}

// The nice value of thread `tid` of this process (the 19th field of its stat, counted after
// the parenthesised command name, which may hold spaces).
int nice_of_thread(const std::string& tid) {
  std::ifstream file("/proc/self/task/" + tid + "/stat");
  std::string stat((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  for (int i = 3; i <= 19; ++i) fields >> field;  // fields 3 (state) to 19 (nice)
  return std::stoi(field);
}

int threads_at_nice(int nice) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    if (nice_of_thread(task.path().filename().string()) == nice) ++count;
  }
  return count;
}

TEST(LoopPriority, DtrainBackgroundNiceSetsTheLoopThreadAloneWhateverTheHost) {
  const std::string me = std::to_string(gettid());
  const int callers_nice = nice_of_thread(me);
  ASSERT_LT(callers_nice, 17) << "run this test at a nice value below 17";
  unsetenv("DTRAIN_RANK");
  unsetenv("DTRAIN_SIZE");
  setenv("DTRAIN_BACKGROUND_NICE", "17", 1);
  init();
  unsetenv("DTRAIN_BACKGROUND_NICE");
  double value = 3, out = 0;
  allreduce("x", {&value, DataType::kFloat64, {1}}, {&out, DataType::kFloat64, {1}}, {ReduceOp::kSum});
  EXPECT_EQ(out, 3);
  // The loop's thread sets its own priority as it starts, which may be after init returns.
  for (int tries = 0; tries < 1000 && threads_at_nice(17) == 0; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(threads_at_nice(17), 1);
  EXPECT_EQ(nice_of_thread(me), callers_nice);
  shutdown();
}

TEST(LoopPriority, AnOutOfRangeValueIsAnErrorNamingTheVariable) {
  for (const char* bad : {"20", "-1", "low"}) {
    setenv("DTRAIN_BACKGROUND_NICE", bad, 1);
    try {
      read_config_from_environment();
      ADD_FAILURE() << "DTRAIN_BACKGROUND_NICE=" << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("DTRAIN_BACKGROUND_NICE"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
  unsetenv("DTRAIN_BACKGROUND_NICE");
}

}  // namespace
}  // namespace dtrain::runtime
