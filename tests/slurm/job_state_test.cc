#include "slurm/job_state.h"

#include <gtest/gtest.h>

namespace dtrain::slurm {
namespace {

TEST(JobState, ReadsStateReasonAndExitCodeFromScontrol) {
  // Abridged from `scontrol show job -o 7` on Slurm 22.05.
  const JobState s = parse_job_state(
      "JobId=7 JobName=mnist UserId=root(0) GroupId=root(0) Priority=4294901754 JobState=FAILED "
      "Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 ExitCode=3:0 "
      "RunTime=00:00:04 Command=/tmp/a b/job.sbatch WorkDir=/tmp/a b");
  EXPECT_EQ(s.state, "FAILED");
  EXPECT_EQ(s.reason, "NonZeroExitCode");
  EXPECT_EQ(s.exit_code, 3);
  EXPECT_EQ(s.exit_signal, 0);
  EXPECT_TRUE(s.ended());
}

TEST(JobState, OnlyFinalStatesEnd) {
  for (const char* going : {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "REQUEUED"}) {
    EXPECT_FALSE(parse_job_state(std::string("JobId=1 JobState=") + going + " ExitCode=0:0").ended()) << going;
  }
  for (const char* done : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"}) {
    EXPECT_TRUE(parse_job_state(std::string("JobId=1 JobState=") + done + " ExitCode=0:15").ended()) << done;
  }
}

TEST(JobState, AnAnswerWithoutAStateIsAnError) {
  EXPECT_THROW(parse_job_state("slurm_load_jobs error: Invalid job id specified"), SlurmError);
  // A key that merely ends in JobState is not it.
  EXPECT_THROW(parse_job_state("JobId=1 OldJobState=RUNNING"), SlurmError);
}

}  // namespace
}  // namespace dtrain::slurm
