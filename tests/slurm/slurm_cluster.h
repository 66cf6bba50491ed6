// A real Slurm cluster for one test (tests/slurm/test_cluster.sh): munged, slurmctld and one
// slurmd per node, every node a network namespace named node1..N. Commands run on node1, the
// controller and login node, with SLURM_CONF pointing at the cluster.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain::testing {

class SlurmCluster {
 public:
  // Why this machine cannot run one (not root, Slurm not installed), or "" when it can.
  static std::string unavailable_reason() {
    if (::geteuid() != 0) return "a Slurm test cluster needs root (network namespaces, slurmd)";
    if (std::system("command -v slurmctld slurmd srun munged nsenter >/dev/null 2>&1") != 0) {
      return "Slurm is not installed (slurmctld, slurmd, slurm-client, munge: scripts/setup installs them)";
    }
    return "";
  }

  explicit SlurmCluster(int nodes) {
    JobResult up = run_job(script() + " up " + dir_.path().string() + " " + std::to_string(nodes), 90);
    started_ = up.exit_code == 0;
    start_output_ = up.output;
  }
  ~SlurmCluster() { run_job(script() + " down " + dir_.path().string(), 60); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  bool started() const { return started_; }
  const std::string& start_output() const { return start_output_; }
  const TempDir& dir() const { return dir_; }

  // A shell command line run on node1 ("srun -N2 ...", "sbatch --wait job.sh").
  JobResult run(const std::string& command, int timeout_s = 120) const {
    return run_job(script() + " exec " + dir_.path().string() + " -- " + command, timeout_s);
  }

 private:
  static std::string script() { return DTRAIN_SLURM_TEST_CLUSTER; }

  TempDir dir_;
  bool started_ = false;
  std::string start_output_;
};

// A test on a fresh two-node cluster; skipped with the reason where none can run.
class OnTwoNodeCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmCluster::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
    cluster_ = std::make_unique<SlurmCluster>(2);
    ASSERT_TRUE(cluster_->started()) << cluster_->start_output();
  }

  std::unique_ptr<SlurmCluster> cluster_;
};

}  // namespace dtrain::testing
