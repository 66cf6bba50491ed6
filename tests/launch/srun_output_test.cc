// srun's output as `dtrain run --slurm` reads it. The srun lines are copied from Slurm 22.05
// runs (a task killed with SIGKILL, a task exiting 3, with --label and --kill-on-bad-exit).
#include "launch/srun_output.h"

#include <signal.h>

#include <gtest/gtest.h>

#include "launch/srun_command.h"

namespace dtrain::launch {
namespace {

SlurmAllocation two_nodes() { return {"5", {"node1", "node2"}, 4}; }

void feed(SrunOutput& output, const std::vector<std::string>& lines) {
  for (const auto& line : lines) output.relay(line + "\n", true);
}

TEST(SrunOutput, LabelsBecomeTheLaunchersPrefixes) {
  SrunOutput tagged(place_on_allocation(two_nodes(), 4), true);
  EXPECT_EQ(tagged.relay("3: loss: 0.5\n", false), "[node2:3]<stdout>:loss: 0.5\n");
  EXPECT_EQ(tagged.relay(" 0: warning\n", true), "[node1:0]<stderr>:warning\n");
  EXPECT_EQ(tagged.relay("srun: Job step aborted\n", true), "srun: Job step aborted\n");
  SrunOutput plain(place_on_allocation(two_nodes(), 4), false);
  EXPECT_EQ(plain.relay("1: x\n", false), "[1]<stdout>:x\n");
}

TEST(SrunOutput, TheFirstReportedTaskIsTheFailureEvenWhenOthersFollow) {
  SrunOutput output(place_on_allocation(two_nodes(), 4), true);
  feed(output, {"srun: error: node2: task 2: Killed", "srun: launch/slurm: _step_signal: Terminating StepId=5.0",
                "srun: error: node2: task 3: Terminated", "srun: error: node1: tasks 0-1: Terminated"});
  ASSERT_TRUE(output.failed_rank());
  EXPECT_EQ(output.failed_rank()->rank, 2);
  EXPECT_EQ(output.failed_rank()->host, "node2");
  EXPECT_EQ(output.failed_wait_status(), SIGKILL);
  EXPECT_EQ(output.describe_failure(143 << 8),
            "rank 2 (host node2) was killed by signal 9 (SIGKILL); srun exited with status 143");
}

TEST(SrunOutput, AnExitCodeAndATaskRangeAreRead) {
  SrunOutput output(place_on_allocation(two_nodes(), 4), true);
  feed(output, {"srun: error: node1: tasks 0-1: Exited with exit code 3"});
  EXPECT_EQ(output.failed_rank()->rank, 0);
  EXPECT_EQ(output.failed_wait_status(), 3 << 8);
  EXPECT_EQ(output.describe_failure(3 << 8), "rank 0 (host node1) exited with status 3; srun exited with status 3");
}

TEST(SrunOutput, WithoutATaskSrunsFirstErrorIsTheReason) {
  SrunOutput output(place_on_allocation(two_nodes(), 4), true);
  feed(output, {"srun: error: Unable to create step for job 5: Requested node configuration is not available"});
  EXPECT_FALSE(output.failed_rank());
  EXPECT_EQ(output.describe_failure(1 << 8),
            "srun exited with status 1: srun: error: Unable to create step for job 5: Requested node configuration is "
            "not available");
}

TEST(SrunCommand, RanksFillNodesInOrderAsSrunsBlockDistributionDoes) {
  const auto placements = place_on_allocation({"5", {"a", "b", "c"}, 0}, 5);
  ASSERT_EQ(placements.size(), 5u);
  EXPECT_EQ(placements[1].host, "a");
  EXPECT_EQ(placements[2].host, "b");
  EXPECT_EQ(placements[4].host, "c");
  const auto argv = srun_argv({placements, {"--cpu-bind=none"}, {"train", "--epochs", "1"}});
  const std::vector<std::string> expected = {"srun",
                                             "--nodes=3",
                                             "--nodelist=a,b,c",
                                             "--ntasks=5",
                                             "--ntasks-per-node=2",
                                             "--distribution=block",
                                             "--kill-on-bad-exit=1",
                                             "--label",
                                             "--overlap",
                                             "--export=ALL",
                                             "--cpu-bind=none",
                                             "train",
                                             "--epochs",
                                             "1"};
  EXPECT_EQ(argv, expected);
  // Two ranks on three nodes use two of them.
  EXPECT_EQ(srun_argv({place_on_allocation({"5", {"a", "b", "c"}, 0}, 2), {}, {"x"}})[1], "--nodes=2");
}

}  // namespace
}  // namespace dtrain::launch
