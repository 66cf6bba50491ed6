// mpirun's output as a waiting launcher reads it. The mpirun lines below are copied from
// Open MPI 4.1.4 runs (a rank killed with SIGKILL, a rank exiting 3, a missing program).
#include "launch/mpirun_output.h"

#include <sys/wait.h>

#include <gtest/gtest.h>

#include "launch/rank_assignment.h"

namespace dtrain::launch {
namespace {

int exited(int code) { return code << 8; }  // a wait status as WIFEXITED/WEXITSTATUS read it

std::vector<RankPlacement> two_hosts_two_slots() { return assign_ranks({{"algo-1", 2}, {"algo-2", 2}}, 4); }

void feed(MpirunOutput& output, const std::vector<std::string>& lines) {
  for (const auto& line : lines) output.relay(line + "\n");
}

TEST(MpirunOutput, RankTagsBecomeTheLaunchersPrefixesWithHosts) {
  MpirunOutput output(two_hosts_two_slots(), true);
  EXPECT_EQ(output.relay("[1,3]<stdout>:loss: 0.5\n"), "[algo-2:3]<stdout>:loss: 0.5\n");
  EXPECT_EQ(output.relay("[1,0]<stderr>:warning [x]\n"), "[algo-1:0]<stderr>:warning [x]\n");
  EXPECT_EQ(output.relay("[1,1]<stdout>:no newline"), "[algo-1:1]<stdout>:no newline");
  EXPECT_EQ(output.relay("mpirun's own line\n"), "mpirun's own line\n");
  EXPECT_EQ(output.relay("[not a tag]<stdout>:x\n"), "[not a tag]<stdout>:x\n");
}

TEST(MpirunOutput, RankTagsWithoutHosts) {
  MpirunOutput output(two_hosts_two_slots(), false);
  EXPECT_EQ(output.relay("[1,2]<stdout>:hello\n"), "[2]<stdout>:hello\n");
}

TEST(MpirunOutput, AKilledRankIsNamedWithItsSignal) {
  MpirunOutput output(two_hosts_two_slots(), true);
  feed(output, {
                   "--------------------------------------------------------------------------",
                   "Primary job  terminated normally, but 1 process returned",
                   "a non-zero exit code. Per user-direction, the job has been aborted.",
                   "--------------------------------------------------------------------------",
                   "--------------------------------------------------------------------------",
                   "mpirun noticed that process rank 2 with PID 12450 on node algo-2 exited on signal 9 (Killed).",
                   "--------------------------------------------------------------------------",
               });
  ASSERT_TRUE(output.failed_rank());
  EXPECT_EQ(output.failed_rank()->rank, 2);
  EXPECT_EQ(output.failed_rank()->host, "algo-2");
  EXPECT_EQ(output.describe_failure(exited(137)),
            "rank 2 (host algo-2) was killed by signal 9 (SIGKILL); mpirun exited with status 137");
}

TEST(MpirunOutput, ARanksExitCodeIsNamedWithItsHost) {
  MpirunOutput output(two_hosts_two_slots(), true);
  feed(output, {
                   "--------------------------------------------------------------------------",
                   "mpirun detected that one or more processes exited with non-zero status, thus causing",
                   "the job to be terminated. The first process to do so was:",
                   "",
                   "  Process name: [[23554,1],3]",
                   "  Exit code:    3",
                   "--------------------------------------------------------------------------",
               });
  ASSERT_TRUE(output.failed_rank());
  EXPECT_EQ(output.failed_rank()->host, "algo-2");
  EXPECT_EQ(output.describe_failure(exited(3)), "rank 3 (host algo-2) exited with status 3");
}

TEST(MpirunOutput, OtherwiseMpirunsFirstMessageExplains) {
  MpirunOutput output(two_hosts_two_slots(), true);
  feed(output, {
                   "--------------------------------------------------------------------------",
                   "mpirun was unable to find the specified executable file, and therefore",
                   "did not launch the job.",
                   "--------------------------------------------------------------------------",
                   "--------------------------------------------------------------------------",
                   "a second message",
                   "--------------------------------------------------------------------------",
               });
  EXPECT_FALSE(output.failed_rank());
  EXPECT_EQ(output.describe_failure(exited(134)),
            "mpirun exited with status 134: mpirun was unable to find the specified executable file, "
            "and therefore did not launch the job.");
}

TEST(MpirunOutput, NothingSaidLeavesMpirunsStatusAndLongMessagesAreCut) {
  MpirunOutput quiet(two_hosts_two_slots(), true);
  EXPECT_EQ(quiet.describe_failure(SIGTERM), "mpirun was killed by signal 15 (SIGTERM)");
  MpirunOutput loud(two_hosts_two_slots(), true);
  feed(loud, {"----------", std::string(2000, 'x'), "----------"});
  EXPECT_LT(loud.describe_failure(exited(1)).size(), 500u);
}

}  // namespace
}  // namespace dtrain::launch
