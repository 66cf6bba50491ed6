#include "launch/worker_env.h"

#include <gtest/gtest.h>

#include <map>

namespace dtrain::launch {
namespace {

std::map<std::string, std::string> as_map(const EnvVars& vars) { return {vars.begin(), vars.end()}; }

WorkerEnvSettings base_settings() {
  WorkerEnvSettings s;
  s.rendezvous_addr = "10.1.2.3";
  s.rendezvous_port = 4567;
  s.identity = {"0123456789abcdef0123456789abcdef", "deadbeef"};
  return s;
}

TEST(WorkerEnv, ExportsPlacementAndJobVariables) {
  RankPlacement p{5, 8, 1, 4, 1, 2, "node-b"};
  auto env = as_map(dtrain_env_for(p, base_settings()));
  std::map<std::string, std::string> expected = {
      {"DTRAIN_RANK", "5"},
      {"DTRAIN_SIZE", "8"},
      {"DTRAIN_LOCAL_RANK", "1"},
      {"DTRAIN_LOCAL_SIZE", "4"},
      {"DTRAIN_CROSS_RANK", "1"},
      {"DTRAIN_CROSS_SIZE", "2"},
      {"DTRAIN_HOSTNAME", "node-b"},
      {"DTRAIN_RENDEZVOUS_ADDR", "10.1.2.3"},
      {"DTRAIN_RENDEZVOUS_PORT", "4567"},
      {"DTRAIN_JOB_TOKEN", "0123456789abcdef0123456789abcdef"},
      {"DTRAIN_JOB_ID", "deadbeef"},
  };
  EXPECT_EQ(env, expected);  // no flag-derived variables unless flags were given
}

TEST(WorkerEnv, ExportsFlagsOnlyWhenGiven) {
  WorkerEnvSettings s = base_settings();
  s.network_interface = "eth1";
  s.timeline_filename = "/tmp/timeline.json";
  s.timeline_mark_cycles = true;
  s.fusion_threshold_mb = 64;
  s.cycle_time_ms = 2.5;
  s.stall_warning_s = 60;
  s.stall_shutdown_s = 0;
  s.verbose = true;
  auto env = as_map(dtrain_env_for(RankPlacement{0, 1, 0, 1, 0, 1, "localhost"}, s));
  EXPECT_EQ(env["DTRAIN_IFACE"], "eth1");
  EXPECT_EQ(env["DTRAIN_TIMELINE"], "/tmp/timeline.json");
  EXPECT_EQ(env["DTRAIN_TIMELINE_MARK_CYCLES"], "1");
  EXPECT_EQ(env["DTRAIN_FUSION_THRESHOLD"], "67108864");
  EXPECT_EQ(env["DTRAIN_CYCLE_TIME_MS"], "2.5");
  EXPECT_EQ(env["DTRAIN_STALL_WARNING_S"], "60");
  EXPECT_EQ(env["DTRAIN_STALL_SHUTDOWN_S"], "0");
  EXPECT_EQ(env["DTRAIN_LOG_LEVEL"], "debug");
}

TEST(WorkerEnv, MergeReplacesInPlaceAndAppendsNewInOrder) {
  std::vector<std::string> parent = {"PATH=/bin", "DTRAIN_RANK=99", "HOME=/root", "DTRAIN_CYCLE_TIME_MS=7", "EMPTY="};
  EnvVars overrides = {{"DTRAIN_RANK", "0"}, {"DTRAIN_SIZE", "2"}, {"A", "x=y"}};
  auto merged = merge_environment(parent, overrides);
  std::vector<std::string> expected = {"PATH=/bin", "DTRAIN_RANK=0", "HOME=/root", "DTRAIN_CYCLE_TIME_MS=7",
                                       "EMPTY=",    "DTRAIN_SIZE=2", "A=x=y"};
  EXPECT_EQ(merged, expected);
}

TEST(WorkerEnv, PicksDtrainVariablesForRemoteForwarding) {
  auto vars = dtrain_vars_of({"PATH=/bin", "DTRAIN_X=1", "NOT_DTRAIN_Y=2", "DTRAIN_Z=a=b"});
  EnvVars expected = {{"DTRAIN_X", "1"}, {"DTRAIN_Z", "a=b"}};
  EXPECT_EQ(vars, expected);
}

TEST(WorkerEnv, FormatsNumbers) {
  EXPECT_EQ(format_env_number(5), "5");
  EXPECT_EQ(format_env_number(0.5), "0.5");
  EXPECT_EQ(format_env_number(1048576), "1048576");
}

TEST(JobIdentity, FreshRandomHexEachTime) {
  JobIdentity a = JobIdentity::generate();
  JobIdentity b = JobIdentity::generate();
  EXPECT_EQ(a.token.size(), 32u);
  EXPECT_EQ(a.job_id.size(), 8u);
  EXPECT_EQ(a.token.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a.job_id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a.token, b.token);
}

}  // namespace
}  // namespace dtrain::launch
