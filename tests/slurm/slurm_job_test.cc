// `dtrain job run --backend slurm` against a real Slurm cluster of two nodes: the MNIST job
// submitted, followed and packed like a local one; a rank killed with SIGKILL; scancel.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/slurm/slurm_cluster.h"

namespace dtrain::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kDtrain = DTRAIN_BINARY;
const std::string kMnist = DTRAIN_MNIST;
const std::string kData = MNIST_DATA_DIR;

// Processes of this machine whose environment names the job (TRAINING_JOB_NAME=<name>).
int processes_of_job(const std::string& name) {
  const std::string needle = "TRAINING_JOB_NAME=" + name + '\0';
  int count = 0;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream environ(entry.path() / "environ");
    std::string env((std::istreambuf_iterator<char>(environ)), {});
    if (env.find(needle) != std::string::npos) ++count;
  }
  return count;
}

class SlurmJob : public OnTwoNodeCluster {
 protected:
  // A 2 hosts x 2 processes job spec whose command is `command` (YAML flow sequence).
  std::string write_spec(const std::string& name, const std::string& command) const {
    const std::string path = cluster_->dir() / (name + ".yaml");
    std::ofstream(path) << "name: " << name << "\ncommand: " << command
                        << "\ninstance_count: 2\nprocesses_per_host: 2\n"
                           "channels:\n  training: {source: "
                        << kData
                        << ", input_mode: File}\n"
                           "metric_definitions:\n"
                           "  - {name: train:loss, regex: \"Loss: ([0-9.]+)\"}\n"
                           "  - {name: test:accuracy, regex: \"Test accuracy: ([0-9.]+)\"}\n"
                           "output_path: "
                        << cluster_->dir() / "out"
                        << "\nmax_run_seconds: 600\nenvironment: {OMP_NUM_THREADS: \"1\"}\n";
    return path;
  }

  nlohmann::json summary(const std::string& name) const {
    std::ifstream in(cluster_->dir() / ("out/" + name + "/summary.json"));
    return nlohmann::json::parse(in, nullptr, false);
  }
};

TEST_F(SlurmJob, TheMnistJobCompletesWithItsArtifacts) {
  const std::string spec =
      write_spec("mnist-slurm", "[" + kMnist + ", --steps, \"40\", --batch-size, \"32\", --threads, \"1\"]");
  JobResult r = cluster_->run(kDtrain + " job run --backend slurm " + spec, 300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Training on 4 ranks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Test accuracy: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dtrain job mnist-slurm: Completed"), std::string::npos) << r.output;
  const nlohmann::json s = summary("mnist-slurm");
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["status"], "Completed");
  EXPECT_EQ(s["hosts_backend"], "slurm");
  EXPECT_GT(s["final_metrics"]["test:accuracy"].get<double>(), 0.5);
  const fs::path out = cluster_->dir() / "out/mnist-slurm";
  EXPECT_GT(fs::file_size(out / "model.tar.gz"), 1000u);
  EXPECT_TRUE(fs::exists(out / "output.tar.gz"));
  EXPECT_GT(fs::file_size(out / "metrics.jsonl"), 0u);
  EXPECT_GT(fs::file_size(out / "logs/algo-1.log"), 0u);
  EXPECT_FALSE(fs::exists(out / "slurm-work")) << "the work directory is removed after the job";
}

TEST_F(SlurmJob, ARankKilledWithSigkillFailsTheJobNamingRankAndNode) {
  const std::string spec = write_spec("killed", "[bash, -c, 'if [ $SLURM_PROCID = 2 ]; then kill -9 $$; fi; exec " +
                                                    kMnist + " --epochs 20 --threads 1']");
  JobResult r = cluster_->run(kDtrain + " job run --backend slurm " + spec, 300);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.exit_code, 124) << "the job did not end: " << r.output;
  const nlohmann::json s = summary("killed");
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_EQ(s["status"], "Failed");
  EXPECT_NE(s["failure_reason"].get<std::string>().find("rank 2 (host node2) was killed by signal 9 (SIGKILL)"),
            std::string::npos)
      << s.dump(2);
}

TEST_F(SlurmJob, ScancelStopsEveryRankAndTheJobRecordsStopped) {
  const std::string spec =
      write_spec("cancelled", "[" + kMnist + ", --epochs, \"50\", --threads, \"1\", --log-every, \"5\"]");
  auto job =
      std::async(std::launch::async, [&] { return cluster_->run(kDtrain + " job run --backend slurm " + spec, 300); });
  // Cancel once training runs on the ranks.
  const fs::path log = cluster_->dir() / "out/cancelled/logs/algo-1.log";
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  auto training = [&] {
    std::ifstream in(log);
    std::string text((std::istreambuf_iterator<char>(in)), {});
    return text.find("Step #5") != std::string::npos;
  };
  while (!training() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(training()) << "training never started";
  ASSERT_GT(processes_of_job("cancelled"), 0);
  JobResult cancel = cluster_->run("scancel --name=cancelled", 60);
  ASSERT_EQ(cancel.exit_code, 0) << cancel.output;

  JobResult r = job.get();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("dtrain job cancelled: Stopped"), std::string::npos) << r.output;
  const nlohmann::json s = summary("cancelled");
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_EQ(s["status"], "Stopped");
  EXPECT_EQ(s["slurm_state"], "CANCELLED");
  // Nothing of the job is left: Slurm's KillWait (5 s) ends what SIGTERM did not.
  const auto gone_by = Clock::now() + std::chrono::seconds(30);
  while (processes_of_job("cancelled") > 0 && Clock::now() < gone_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(processes_of_job("cancelled"), 0);
}

}  // namespace
}  // namespace dtrain::testing
