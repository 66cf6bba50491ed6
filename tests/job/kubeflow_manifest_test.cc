#include "job/kubeflow_manifest.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "job/job_error.h"
#include "tests/job/test_support.h"

namespace dtrain::job {
namespace {

using testing::TempDir;

JobSpec sample_spec(const std::string& dir) {
  std::filesystem::create_directories(dir + "/mnist");
  return parse_job_spec(R"y(
name: MNIST-2x4
command: [dtrain-mnist, --log-every, "10"]
instance_count: 2
processes_per_host: 4
hyperparameters: {epochs: 2, lr: 0.001, optimizer: adam}
channels:
  training: {source: mnist}
max_run_seconds: 3600
environment: {OMP_NUM_THREADS: "1"}
)y",
                        "s", dir);
}

std::map<std::string, std::string> env_of(const YAML::Node& container) {
  std::map<std::string, std::string> env;
  for (const auto& e : container["env"]) env[e["name"].as<std::string>()] = e["value"].as<std::string>();
  return env;
}

TEST(KubeflowManifest, EngineMpiLaunchesWithMpirunAndTheCustomOptions) {
  TempDir dir;
  JobSpec spec = sample_spec(dir.path().string());
  spec.engine = Engine::kMpi;
  spec.custom_mpi_options = "-x NCCL_DEBUG=INFO";
  YAML::Node m = YAML::Load(render_mpijob(spec, KubeflowOptions{}));
  const YAML::Node lc = m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
  std::vector<std::string> command = lc["command"].as<std::vector<std::string>>();
  std::vector<std::string> expected = {"dtrain",
                                       "run",
                                       "--mpi",
                                       "--mpi-args",
                                       "-x NCCL_DEBUG=INFO",
                                       "--hostfile",
                                       "/etc/mpi/hostfile",
                                       "-np",
                                       "8",
                                       "--",
                                       "dtrain-mnist",
                                       "--log-every",
                                       "10",
                                       "--epochs",
                                       "2",
                                       "--lr",
                                       "0.001",
                                       "--optimizer",
                                       "adam"};
  EXPECT_EQ(command, expected);
}

TEST(KubeflowManifest, AnElasticJobIsRefusedInOneLine) {
  TempDir dir;
  JobSpec spec = sample_spec(dir.path().string());
  spec.elastic = ElasticSpec{1, 2};
  try {
    render_mpijob(spec, KubeflowOptions{});
    ADD_FAILURE() << "an elastic job was rendered";
  } catch (const JobError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_TRUE(
        m.starts_with("elastic: not supported by --target kubeflow: an MPIJob (kubeflow.org/v2beta1) has no "
                      "elastic policy"))
        << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(KubeflowManifest, EngineParameterServerLaunchesWithPs) {
  TempDir dir;
  JobSpec spec = sample_spec(dir.path().string());
  spec.engine = Engine::kParameterServer;
  YAML::Node m = YAML::Load(render_mpijob(spec, KubeflowOptions{}));
  const YAML::Node lc = m["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0];
  std::vector<std::string> command = lc["command"].as<std::vector<std::string>>();
  ASSERT_GE(command.size(), 3u);
  EXPECT_EQ(std::vector<std::string>(command.begin(), command.begin() + 3),
            (std::vector<std::string>{"dtrain", "run", "--ps"}));
}

TEST(KubeflowManifest, RendersAnMpiJobV2beta1FieldByField) {
  TempDir dir;
  KubeflowOptions options;
  options.image = "registry.example/dtrain:1.0";
  options.namespace_name = "training";
  options.gpus_per_worker = 1;
  YAML::Node m = YAML::Load(render_mpijob(sample_spec(dir.path().string()), options));

  EXPECT_EQ(m["apiVersion"].as<std::string>(), "kubeflow.org/v2beta1");
  EXPECT_EQ(m["kind"].as<std::string>(), "MPIJob");
  EXPECT_EQ(m["metadata"]["name"].as<std::string>(), "mnist-2x4");
  EXPECT_EQ(m["metadata"]["namespace"].as<std::string>(), "training");
  const YAML::Node spec = m["spec"];
  EXPECT_EQ(spec["slotsPerWorker"].as<int>(), 4);
  EXPECT_EQ(spec["runPolicy"]["cleanPodPolicy"].as<std::string>(), "Running");
  EXPECT_EQ(spec["runPolicy"]["activeDeadlineSeconds"].as<int>(), 3600);
  EXPECT_EQ(spec["runPolicy"]["backoffLimit"].as<int>(), 0);
  EXPECT_EQ(spec["sshAuthMountPath"].as<std::string>(), "/root/.ssh");
  EXPECT_EQ(spec["launcherCreationPolicy"].as<std::string>(), "WaitForWorkersReady");
  EXPECT_EQ(spec["mpiImplementation"].as<std::string>(), "OpenMPI");

  const YAML::Node launcher = spec["mpiReplicaSpecs"]["Launcher"];
  EXPECT_EQ(launcher["replicas"].as<int>(), 1);
  EXPECT_EQ(launcher["restartPolicy"].as<std::string>(), "Never");
  const YAML::Node lc = launcher["template"]["spec"]["containers"][0];
  EXPECT_EQ(lc["image"].as<std::string>(), "registry.example/dtrain:1.0");
  std::vector<std::string> command = lc["command"].as<std::vector<std::string>>();
  std::vector<std::string> expected = {"dtrain",      "run",   "--hostfile",  "/etc/mpi/hostfile",
                                       "-np",         "8",     "--",          "dtrain-mnist",
                                       "--log-every", "10",    "--epochs",    "2",
                                       "--lr",        "0.001", "--optimizer", "adam"};
  EXPECT_EQ(command, expected);
  auto env = env_of(lc);
  EXPECT_EQ(env["SM_CHANNEL_TRAINING"], "/data/channels/training");
  EXPECT_EQ(env["SM_MODEL_DIR"], "/data/jobs/MNIST-2x4/model");
  EXPECT_EQ(env["SM_HPS"], R"({"epochs":2,"lr":0.001,"optimizer":"adam"})");
  EXPECT_EQ(env["SM_HP_OPTIMIZER"], "adam");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "1");

  const YAML::Node worker = spec["mpiReplicaSpecs"]["Worker"];
  EXPECT_EQ(worker["replicas"].as<int>(), 2);
  const YAML::Node pod = worker["template"]["spec"];
  const YAML::Node wc = pod["containers"][0];
  EXPECT_NE(wc["command"][2].as<std::string>().find("sshd -De"), std::string::npos);
  EXPECT_EQ(wc["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 1);
  EXPECT_EQ(wc["resources"]["limits"]["cpu"].as<std::string>(), "2");
  EXPECT_EQ(wc["resources"]["requests"]["memory"].as<std::string>(), "4Gi");
  EXPECT_EQ(wc["volumeMounts"][0]["name"].as<std::string>(), "data");
  EXPECT_EQ(wc["volumeMounts"][0]["mountPath"].as<std::string>(), "/data");
  EXPECT_EQ(pod["volumes"][0]["persistentVolumeClaim"]["claimName"].as<std::string>(), "mnist-2x4-data");
  EXPECT_EQ(env_of(wc)["SM_CHANNEL_TRAINING"], "/data/channels/training");
}

TEST(KubeflowManifest, KubernetesNames) {
  EXPECT_EQ(kubernetes_name("My_Job.v2"), "my-job-v2");
  EXPECT_EQ(kubernetes_name("--x--"), "x");
}

}  // namespace
}  // namespace dtrain::job
