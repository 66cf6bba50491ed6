#include "launch/mpirun_command.h"

#include "launch/launch_error.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace dtrain::launch {
namespace {

TEST(MpirunCommand, CarriesHostsKnobsInterfaceAndExtraArguments) {
  MpirunSettings s;
  s.np = 4;
  s.hosts = {{"a", 2}, {"b", 2}};
  s.network_interface = "eth1";
  s.knobs = {{"DTRAIN_FUSION_THRESHOLD", "1048576"}};
  s.forwarded_names = {"PATH", "DTRAIN_CYCLE_TIME_MS"};
  s.extra_args = split_arguments("  --bind-to  none ");
  s.running_as_root = true;
  s.command = {"./train", "--epochs", "1"};
  const std::vector<std::string> expected = {"mpirun",
                                             "-np",
                                             "4",
                                             "-H",
                                             "a:2,b:2",
                                             "--map-by",
                                             "slot",
                                             "--tag-output",
                                             "--allow-run-as-root",
                                             "--mca",
                                             "btl_tcp_if_include",
                                             "eth1",
                                             "--mca",
                                             "oob_tcp_if_include",
                                             "eth1",
                                             "-x",
                                             "DTRAIN_CYCLE_TIME_MS",
                                             "-x",
                                             "DTRAIN_FUSION_THRESHOLD",
                                             "-x",
                                             "PATH",
                                             "--bind-to",
                                             "none",
                                             "./train",
                                             "--epochs",
                                             "1"};
  EXPECT_EQ(mpirun_argv(s), expected);
}

TEST(MpirunCommand, OversubscribedRanksYieldAndNonRootOmitsTheFlag) {
  MpirunSettings s;
  s.np = 3;
  s.hosts = {{"localhost", 3}};
  s.oversubscribed = true;
  s.command = {"prog"};
  const auto argv = mpirun_argv(s);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--allow-run-as-root"), 0);
  EXPECT_NE(std::find(argv.begin(), argv.end(), "mpi_yield_when_idle"), argv.end());
}

TEST(MpirunCommand, AnAgentStartsTheDaemonsAsOneMcaValue) {
  MpirunSettings s;
  s.hosts = {{"algo-1", 1}, {"algo-2", 1}};
  s.np = 2;
  s.agent = {"/bin/dtrain", "job", "host-exec", "--table", "/tmp/hosts.json"};
  s.command = {"prog"};
  const auto argv = mpirun_argv(s);
  auto at = std::find(argv.begin(), argv.end(), "plm_rsh_agent");
  ASSERT_NE(at, argv.end());
  EXPECT_EQ(*(at - 1), "--mca");
  EXPECT_EQ(*(at + 1), "/bin/dtrain job host-exec --table /tmp/hosts.json");
  s.agent = {"/bin/dtrain", "--table", "/tmp/my hosts.json"};
  EXPECT_THROW(mpirun_argv(s), LaunchError);
}

TEST(MpirunCommand, SharedKnobsLeaveOutWhatMpiProvides) {
  const EnvVars rank_env = {{"DTRAIN_RANK", "1"},
                            {"DTRAIN_SIZE", "2"},
                            {"DTRAIN_JOB_TOKEN", "t"},
                            {"DTRAIN_STALL_WARNING_S", "5"},
                            {"DTRAIN_HOSTNAME", "h"}};
  EXPECT_EQ(shared_knobs(rank_env), (EnvVars{{"DTRAIN_STALL_WARNING_S", "5"}}));
}

}  // namespace
}  // namespace dtrain::launch
