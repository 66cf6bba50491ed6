// dtrain on a real Slurm cluster of two nodes (network namespaces on this machine): ranks
// started by a bare srun, by `dtrain run --slurm` inside an allocation, a task that dies,
// and a stranger at a running step's rendezvous.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <string>

#include "tests/slurm/slurm_cluster.h"

namespace dtrain::testing {
namespace {

const std::string kDemo = DTRAIN_COLLECTIVES_DEMO;
const std::string kDtrain = DTRAIN_BINARY;

class OnSlurm : public OnTwoNodeCluster {
 protected:
  // Every rank of a 2 nodes x 2 tasks world printed its place and checked every collective.
  static void expect_four_correct_ranks(const std::string& output) {
    for (int rank = 0; rank < 4; ++rank) {
      const std::string place = "rank " + std::to_string(rank) + " of 4 on host node" + std::to_string(rank / 2 + 1) +
                                " (local rank " + std::to_string(rank % 2) + " of 2, cross rank " +
                                std::to_string(rank / 2) + " of 2)";
      EXPECT_NE(output.find(place), std::string::npos) << place << "\n" << output;
      EXPECT_NE(output.find("rank " + std::to_string(rank) + ": all collectives correct"), std::string::npos) << output;
    }
  }
};

TEST_F(OnSlurm, ABareSrunIsADtrainJob) {
  JobResult r = cluster_->run("srun -N2 -n4 --kill-on-bad-exit=1 " + kDemo);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_four_correct_ranks(r.output);
  // No token given: the step works, and rank 0 says who could join.
  EXPECT_NE(r.output.find("DTRAIN_JOB_TOKEN is not set"), std::string::npos) << r.output;
}

// Rank 0 fails first (it serves the step's rendezvous, so it reaches the name at once) and
// --kill-on-bad-exit then ends rank 1, possibly before it gets that far. The ranks' stderr
// goes to files: srun, ending a step, sometimes drops what the failed task wrote last on
// its way to the terminal (seen once: no error line at all).
// A Python program (dtrain.torch) under a bare srun and under `dtrain run --slurm` in a batch
// job: every rank knows its place from Slurm, and its allreduce through Horovod's API and its
// all_reduce through torch.distributed's backend "dtrain" are right.
TEST_F(OnSlurm, PythonRanksUnderABareSrunAndUnderDtrainRunSlurm) {
  const std::string python =
      "env PYTHONPATH=" + std::string(DTRAIN_PYTHON_PACKAGE) + " " + DTRAIN_PYTHON + " " + DTRAIN_PYTHON_RANKS;
  const auto expect_four_python_ranks = [](const std::string& output) {
    for (int rank = 0; rank < 4; ++rank) {
      const std::string line = "python rank " + std::to_string(rank) + " of 4 on host node" +
                               std::to_string(rank / 2 + 1) + " (local rank " + std::to_string(rank % 2) +
                               " of 2, cross rank " + std::to_string(rank / 2) + " of 2): allreduce correct";
      EXPECT_NE(output.find(line), std::string::npos) << line << "\n" << output;
      const std::string torch_line = "torch.distributed rank " + std::to_string(rank) + " of 4: all_reduce correct";
      EXPECT_NE(output.find(torch_line), std::string::npos) << torch_line << "\n" << output;
    }
  };
  JobResult bare = cluster_->run("srun -N2 -n4 --kill-on-bad-exit=1 " + python);
  ASSERT_EQ(bare.exit_code, 0) << bare.output;
  expect_four_python_ranks(bare.output);

  const std::string script = cluster_->dir() / "python-job.sh";
  const std::string log = cluster_->dir() / "python-job.out";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --output=" << log
                        << "\n"
                        << kDtrain << " run --slurm -- " << python << "\n";
  JobResult batch = cluster_->run("sbatch --wait " + script);
  const std::string output = read_file(log);
  ASSERT_EQ(batch.exit_code, 0) << batch.output << output;
  expect_four_python_ranks(output);
}

TEST_F(OnSlurm, AHostNameThatDoesNotResolveIsAnErrorOnEveryRankNotACrash) {
  const std::string errors = (cluster_->dir().path() / "rank%t.err").string();
  JobResult r = cluster_->run("srun -N2 -n2 --kill-on-bad-exit=1 --error=" + errors +
                              " --export=ALL,DTRAIN_HOSTNAME=no-such-host " + kDemo);
  EXPECT_NE(r.exit_code, 0) << r.output;
  const std::string rank0 = read_file(cluster_->dir().path() / "rank0.err");
  EXPECT_NE(rank0.find("dtrain-collectives-demo: dtrain: this rank's host name 'no-such-host' does not resolve"),
            std::string::npos)
      << rank0 << r.output;
  for (const std::string& output : {r.output, rank0, read_file(cluster_->dir().path() / "rank1.err")}) {
    EXPECT_EQ(output.find("Segmentation fault"), std::string::npos) << output;
  }
}

TEST_F(OnSlurm, DtrainRunSlurmInsideABatchJobPrefixesEveryRank) {
  const std::string script = cluster_->dir() / "job.sh";
  const std::string log = cluster_->dir() / "job.out";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --output=" << log
                        << "\n"
                        << kDtrain << " run --slurm -- " << kDemo << "\necho \"dtrain run exited $?\"\n";
  JobResult r = cluster_->run("sbatch --wait " + script);
  const std::string output = read_file(log);
  ASSERT_EQ(r.exit_code, 0) << r.output << output;
  expect_four_correct_ranks(output);
  EXPECT_NE(output.find("[3]<stdout>:rank 3: all collectives correct"), std::string::npos) << output;
  EXPECT_NE(output.find("dtrain run exited 0"), std::string::npos) << output;
}

TEST_F(OnSlurm, ATaskKilledWithSigkillEndsTheStepNamingItsRankAndNode) {
  const std::string program = "bash -c 'if [ $SLURM_PROCID = 2 ]; then kill -9 $$; fi; exec " + kDemo + "'";
  JobResult r = cluster_->run("salloc -N2 -n4 " + kDtrain + " run --slurm -- " + program, 90);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the step did not end: " << r.output;
  EXPECT_NE(r.output.find("dtrain run: rank 2 (host node2) was killed by signal 9 (SIGKILL)"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("all collectives correct"), std::string::npos) << r.output;
}

TEST_F(OnSlurm, AStrangerWithoutTheTokenCannotJoinARunningStep) {
  // Task 1 holds back until the stranger has tried, so rank 0 is waiting at its rendezvous.
  const std::string gate = cluster_->dir() / "stranger-done";
  const std::string port = "23456";
  const std::string program = "bash -c 'if [ $SLURM_PROCID = 1 ]; then while [ ! -e " + gate +
                              " ]; do sleep 0.1; done; fi; exec " + kDemo + "'";
  auto job = std::async(std::launch::async, [&] {
    return cluster_->run("env DTRAIN_JOB_TOKEN=0123456789abcdef DTRAIN_RENDEZVOUS_PORT=" + port +
                         " srun -N2 -n2 --kill-on-bad-exit=1 " + program);
  });
  // The stranger knows the job (the first one: id 1), the step, the node list and the port,
  // not the token; it claims to be task 1.
  JobResult stranger = cluster_->run(
      "env SLURM_JOB_ID=1 SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=2 SLURM_PROCID=1 SLURM_LOCALID=0 SLURM_NODEID=1 "
      "SLURM_STEP_NODELIST='node[1-2]' SLURM_STEP_TASKS_PER_NODE='1(x2)' DTRAIN_RENDEZVOUS_PORT=" +
          port + " DTRAIN_TIMEOUT_S=30 " + kDemo,
      60);
  std::ofstream(gate) << "done\n";
  JobResult r = job.get();
  EXPECT_NE(stranger.exit_code, 0) << stranger.output;
  EXPECT_NE(stranger.output.find("refused this rank's job token"), std::string::npos) << stranger.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("rank 1: all collectives correct"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace dtrain::testing
