// dtrain::placement_from_environment(): the launcher's placement, checked as init() checks
// it, read without starting the runtime.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "dtrain/dtrain.h"

namespace dtrain {
namespace {

// The variables a launcher sets, saved before each test and restored after it, so a test
// that sets them leaves the process's environment as it found it.
class PlacementFromEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kLauncherVariables) {
      const char* value = std::getenv(name);
      saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }

  static constexpr const char* kLauncherVariables[] = {"DTRAIN_RANK",
                                                       "DTRAIN_SIZE",
                                                       "DTRAIN_LOCAL_RANK",
                                                       "DTRAIN_LOCAL_SIZE",
                                                       "DTRAIN_CROSS_RANK",
                                                       "DTRAIN_CROSS_SIZE",
                                                       "DTRAIN_RENDEZVOUS_ADDR",
                                                       "DTRAIN_RENDEZVOUS_PORT",
                                                       "DTRAIN_JOB_TOKEN",
                                                       "OMPI_COMM_WORLD_SIZE",
                                                       "OMPI_COMM_WORLD_RANK",
                                                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                                                       "OMPI_COMM_WORLD_LOCAL_RANK"};

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

TEST_F(PlacementFromEnvironment, WithoutALauncherIsAWorldOfOne) {
  const Placement placement = placement_from_environment();
  EXPECT_EQ(placement.rank, 0);
  EXPECT_EQ(placement.size, 1);
  EXPECT_EQ(placement.local_rank, 0);
  EXPECT_EQ(placement.local_size, 1);
  EXPECT_EQ(placement.cross_rank, 0);
  EXPECT_EQ(placement.cross_size, 1);
  EXPECT_FALSE(is_initialized());
}

TEST_F(PlacementFromEnvironment, IsWhatTheLauncherSetWithoutStartingTheRuntime) {
  // Rank 3 of 4, the second of two on the second host, with a store nobody serves:
  // reading the placement must not go looking for it.
  setenv("DTRAIN_RANK", "3", 1);
  setenv("DTRAIN_SIZE", "4", 1);
  setenv("DTRAIN_LOCAL_RANK", "1", 1);
  setenv("DTRAIN_LOCAL_SIZE", "2", 1);
  setenv("DTRAIN_CROSS_RANK", "1", 1);
  setenv("DTRAIN_CROSS_SIZE", "2", 1);
  setenv("DTRAIN_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("DTRAIN_RENDEZVOUS_PORT", "1", 1);
  setenv("DTRAIN_JOB_TOKEN", "t", 1);
  const Placement placement = placement_from_environment();
  EXPECT_EQ(placement.rank, 3);
  EXPECT_EQ(placement.size, 4);
  EXPECT_EQ(placement.local_rank, 1);
  EXPECT_EQ(placement.local_size, 2);
  EXPECT_EQ(placement.cross_rank, 1);
  EXPECT_EQ(placement.cross_size, 2);
  EXPECT_FALSE(is_initialized());
}

TEST_F(PlacementFromEnvironment, MalformedOrInconsistentValuesAreErrorsNamingTheVariable) {
  setenv("DTRAIN_SIZE", "two", 1);
  try {
    placement_from_environment();
    FAIL() << "DTRAIN_SIZE=two was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DTRAIN_SIZE='two'"), std::string::npos) << e.what();
  }
  setenv("DTRAIN_SIZE", "2", 1);
  setenv("DTRAIN_RANK", "5", 1);
  setenv("DTRAIN_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("DTRAIN_RENDEZVOUS_PORT", "1", 1);
  setenv("DTRAIN_JOB_TOKEN", "t", 1);
  try {
    placement_from_environment();
    FAIL() << "rank 5 of 2 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DTRAIN_RANK=5"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain
