#include "job/training_environment.h"

#include <gtest/gtest.h>

#include <map>

#include "job/container_layout.h"
#include "job/job_spec.h"
#include "tests/job/test_support.h"

namespace dtrain::job {
namespace {

using Json = nlohmann::ordered_json;
using testing::TempDir;

// A hyperparameters.json as the SageMaker SDK writes it: every value a JSON
// string; quoted strings, booleans, numbers, lists, maps, and a value that is
// not JSON at all. The expected values below are what the training toolkit
// (mapping.to_env_vars / to_cmd_args) produces for it under Python 3.
const char* kSampleHyperparameters = R"({
  "epochs": "10", "learning_rate": "0.001", "optimizer": "\"adam\"", "use_amp": "true",
  "momentum": "1e-05", "name": "plain text", "layers": "[64, 32]",
  "options": "{\"b\": 2, \"a\": \"x\"}", "quoted_number": "\"5\"", "x": "1.0", "big": "1e16",
  "neg": "-3", "nothing": "null", "sagemaker_program": "\"train.py\"",
  "sagemaker_mpi_enabled": "true"
})";

void write_sample(const ContainerLayout& layout) {
  ContainerConfig config;
  config.hyperparameters_file = Json::parse(kSampleHyperparameters);
  config.resource.current_host = "algo-2";
  config.resource.hosts = {"algo-1", "algo-2"};
  config.resource.network_interface_name = "eth0";
  config.input_data_config = Json::parse(
      R"({"training": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"},
          "eval": {"TrainingInputMode": "Pipe", "S3DistributionType": "ShardedByKey", "RecordWrapperType": "None"}})");
  write_container_config(layout, config);
}

const std::vector<std::string> kExpectedArgs = {
    "--big",     "1e+16",      "--epochs",    "10",     "--layers",   "[64, 32]", "--learning_rate",
    "0.001",     "--momentum", "1e-05",       "--name", "plain text", "--neg",    "-3",
    "--nothing", "",           "--optimizer", "adam",   "--options",  "a=x,b=2",  "--quoted_number",
    "5",         "--use_amp",  "True",        "-x",     "1.0"};

TEST(ContainerLayout, WritesTheOptMlTree) {
  TempDir dir;
  ContainerLayout layout(dir / "root");
  write_sample(layout);
  for (const auto& d : {layout.input_config_dir(), layout.input_data_dir(), layout.model_dir(),
                        layout.output_data_dir(), layout.code_dir()}) {
    EXPECT_TRUE(std::filesystem::is_directory(d)) << d;
  }
  Json rc = read_json_file(layout.resource_config_file());
  EXPECT_EQ(rc["current_host"], "algo-2");
  EXPECT_EQ(rc["current_instance_type"], "local");
  EXPECT_EQ(rc["current_group_name"], "homogeneousCluster");
  EXPECT_EQ(rc["hosts"], Json::parse(R"(["algo-1","algo-2"])"));
  EXPECT_EQ(rc["instance_groups"][0]["instance_group_name"], "homogeneousCluster");
  EXPECT_EQ(rc["instance_groups"][0]["hosts"], rc["hosts"]);
  EXPECT_EQ(rc["network_interface_name"], "eth0");
  EXPECT_EQ(layout.container_path("/opt/ml/checkpoints"), dir / "root/checkpoints");
}

TEST(ContainerLayout, JobSpecBecomesConfigFiles) {
  TempDir dir;
  std::filesystem::create_directories(dir / "d");
  JobSpec spec = parse_job_spec(
      "name: j\ncommand: [x]\nprocesses_per_host: 4\nhyperparameters: {lr: 0.1, opt: adam, n: \"3\"}\n"
      "channels:\n  train: {source: d, input_mode: Pipe, distribution: ShardedByKey}\n",
      "s", dir.path().string());
  Json hp = hyperparameters_file_for(spec);
  EXPECT_EQ(hp["lr"], "0.1");
  EXPECT_EQ(hp["opt"], "\"adam\"");
  EXPECT_EQ(hp["n"], "\"3\"");
  EXPECT_EQ(hp["sagemaker_mpi_num_of_processes_per_host"], "4");
  EXPECT_EQ(hp["sagemaker_mpi_enabled"], "true");
  Json idc = input_data_config_for(spec);
  EXPECT_EQ(idc["train"]["TrainingInputMode"], "Pipe");
  EXPECT_EQ(idc["train"]["S3DistributionType"], "ShardedByKey");
  EXPECT_EQ(idc["train"]["RecordWrapperType"], "None");
}

// The spec's elastic section reaches the master through hyperparameters.json, as a framework
// parameter (not an argument of the algorithm).
TEST(ContainerLayout, ElasticSectionTravelsAsAFrameworkParameter) {
  TempDir dir;
  ContainerLayout layout(dir / "root");
  JobSpec spec = parse_job_spec(
      "name: j\ncommand: [x]\ninstance_count: 3\nelastic: {min_hosts: 2, timeout_s: 30, reset_limit: 4}\n", "s",
      dir.path().string());
  ContainerConfig config;
  config.hyperparameters_file = hyperparameters_file_for(spec);
  config.resource.current_host = "algo-1";
  config.resource.hosts = {"algo-1", "algo-2", "algo-3"};
  write_container_config(layout, config);
  TrainingEnvironment env = TrainingEnvironment::read(layout);
  const std::optional<ElasticSpec> elastic = env.elastic();
  ASSERT_TRUE(elastic);
  EXPECT_EQ(elastic->min_hosts, 2);
  EXPECT_EQ(elastic->max_hosts, 3);
  EXPECT_EQ(elastic->timeout_s, 30);
  EXPECT_EQ(elastic->host_cooldown_s, 300);
  EXPECT_EQ(elastic->reset_limit, 4);
  EXPECT_TRUE(env.user_args().empty());

  spec.elastic.reset();
  EXPECT_FALSE(hyperparameters_file_for(spec).contains("sagemaker_elastic"));
}

TEST(TrainingEnvironment, MatchesTheToolkitForASampleHyperparametersFile) {
  TempDir dir;
  ContainerLayout layout(dir / "root");
  write_sample(layout);
  TrainingEnvironment env = TrainingEnvironment::read(layout);
  EXPECT_EQ(env.user_args(), kExpectedArgs);
  EXPECT_FALSE(env.is_master);
  EXPECT_EQ(env.master_hostname, "algo-1");

  EnvList list = env.env_vars();
  std::map<std::string, std::string> vars(list.begin(), list.end());
  std::string base = layout.base_dir();
  std::map<std::string, std::string> expected = {
      {"SM_HP_BIG", "1e+16"},
      {"SM_HP_EPOCHS", "10"},
      {"SM_HP_LAYERS", "[64,32]"},
      {"SM_HP_LEARNING_RATE", "0.001"},
      {"SM_HP_MOMENTUM", "1e-05"},
      {"SM_HP_NAME", "plain text"},
      {"SM_HP_NEG", "-3"},
      {"SM_HP_NOTHING", ""},
      {"SM_HP_OPTIMIZER", "adam"},
      {"SM_HP_OPTIONS", R"({"a":"x","b":2})"},
      {"SM_HP_QUOTED_NUMBER", "5"},
      {"SM_HP_USE_AMP", "true"},
      {"SM_HP_X", "1.0"},
      {"SM_HPS",
       R"({"big":1e+16,"epochs":10,"layers":[64,32],"learning_rate":0.001,"momentum":1e-05,"name":"plain text","neg":-3,"nothing":null,"optimizer":"adam","options":{"a":"x","b":2},"quoted_number":"5","use_amp":true,"x":1.0})"},
      {"SM_USER_ARGS",
       R"(["--big","1e+16","--epochs","10","--layers","[64, 32]","--learning_rate","0.001","--momentum","1e-05","--name","plain text","--neg","-3","--nothing","","--optimizer","adam","--options","a=x,b=2","--quoted_number","5","--use_amp","True","-x","1.0"])"},
      {"SM_FRAMEWORK_PARAMS", R"({"sagemaker_mpi_enabled":true,"sagemaker_program":"train.py"})"},
      {"SM_HOSTS", R"(["algo-1","algo-2"])"},
      {"SM_CURRENT_HOST", "algo-2"},
      {"SM_CURRENT_INSTANCE_TYPE", "local"},
      {"SM_CURRENT_INSTANCE_GROUP", "homogeneousCluster"},
      {"SM_NETWORK_INTERFACE_NAME", "eth0"},
      {"SM_CHANNELS", R"(["eval","training"])"},
      {"SM_CHANNEL_TRAINING", base + "/input/data/training"},
      {"SM_CHANNEL_EVAL", base + "/input/data/eval"},
      {"SM_MODEL_DIR", base + "/model"},
      {"SM_OUTPUT_DIR", base + "/output"},
      {"SM_OUTPUT_DATA_DIR", base + "/output/data"},
      {"SM_OUTPUT_INTERMEDIATE_DIR", base + "/output/intermediate"},
      {"SM_INPUT_DIR", base + "/input"},
      {"SM_INPUT_CONFIG_DIR", base + "/input/config"},
      {"SM_MODULE_DIR", base + "/code"},
      {"SM_MODULE_NAME", "train"},
      {"SM_USER_ENTRY_POINT", "train.py"},
      {"SM_LOG_LEVEL", "20"},
      {"SM_IS_HETERO", "false"},
      {"SM_NUM_CPUS", std::to_string(count_cpus())},
      {"SM_NUM_GPUS", std::to_string(count_gpus())},
  };
  for (const auto& [name, value] : expected) {
    ASSERT_TRUE(vars.count(name)) << name;
    EXPECT_EQ(vars[name], value) << name;
  }
  Json training = Json::parse(vars["SM_TRAINING_ENV"]);
  EXPECT_EQ(training["current_host"], "algo-2");
  EXPECT_EQ(training["hyperparameters"]["optimizer"], "adam");
  EXPECT_EQ(training["channel_input_dirs"]["training"], base + "/input/data/training");
  EXPECT_EQ(training["is_master"], false);
  EXPECT_EQ(training["master_hostname"], "algo-1");
}

}  // namespace
}  // namespace dtrain::job
