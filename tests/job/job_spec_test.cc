#include "job/job_spec.h"

#include <gtest/gtest.h>

#include "job/job_error.h"
#include "tests/job/test_support.h"

namespace dtrain::job {
namespace {

using testing::TempDir;

TEST(JobSpec, ParsesEveryFieldAndResolvesPaths) {
  TempDir dir;
  std::filesystem::create_directories(dir / "data/train");
  const char* yaml = R"y(
name: mnist-2x1
command: [dtrain-mnist, --steps, "20"]
instance_count: 2
instance_type: ml.c5.xlarge
processes_per_host: 3
hyperparameters:
  lr: 0.01
  epochs: 2
  optimizer: adam
  quoted: "5"
  amp: true
channels:
  training: {source: data/train, input_mode: Pipe, distribution: ShardedByKey, content_type: application/x-idx}
  shared: {source: data, shared: true}
distribution: {engine: mpi, custom_mpi_options: "-x NCCL_DEBUG=INFO"}
metric_definitions:
  - {name: loss, regex: "loss ([0-9.]+)"}
checkpoint: {local_path: /opt/ml/checkpoints/run, sync_to: ckpt}
output_path: out
max_run_seconds: 600
environment: {OMP_NUM_THREADS: 1, B: x}
)y";
  JobSpec spec = parse_job_spec(yaml, "spec.yaml", dir.path().string());
  EXPECT_EQ(spec.name, "mnist-2x1");
  EXPECT_EQ(spec.command, (std::vector<std::string>{"dtrain-mnist", "--steps", "20"}));
  EXPECT_EQ(spec.instance_count, 2);
  EXPECT_EQ(spec.instance_type, "ml.c5.xlarge");
  EXPECT_EQ(spec.processes_per_host, 3);
  EXPECT_EQ(spec.hyperparameters["lr"], nlohmann::ordered_json(0.01));
  EXPECT_EQ(spec.hyperparameters["epochs"], nlohmann::ordered_json(2));
  EXPECT_EQ(spec.hyperparameters["optimizer"], nlohmann::ordered_json("adam"));
  EXPECT_EQ(spec.hyperparameters["quoted"], nlohmann::ordered_json("5"));
  EXPECT_EQ(spec.hyperparameters["amp"], nlohmann::ordered_json(true));
  ASSERT_EQ(spec.channels.size(), 2u);
  EXPECT_EQ(spec.channels[0].name, "shared");  // sorted
  EXPECT_TRUE(spec.channels[0].shared);
  EXPECT_EQ(spec.channels[1].source, dir / "data/train");
  EXPECT_EQ(spec.channels[1].input_mode, InputMode::kPipe);
  EXPECT_EQ(spec.channels[1].distribution, Distribution::kShardedByKey);
  EXPECT_EQ(spec.channels[1].content_type, "application/x-idx");
  EXPECT_EQ(spec.engine, Engine::kMpi);
  EXPECT_EQ(spec.custom_mpi_options, "-x NCCL_DEBUG=INFO");
  ASSERT_EQ(spec.metric_definitions.size(), 1u);
  EXPECT_EQ(spec.checkpoint.local_path, "/opt/ml/checkpoints/run");
  EXPECT_EQ(spec.checkpoint.sync_to, dir / "ckpt");
  EXPECT_EQ(spec.output_path, dir / "out");
  EXPECT_EQ(spec.max_run_seconds, 600);
  ASSERT_EQ(spec.environment.size(), 2u);
  EXPECT_EQ(spec.environment[0], (std::pair<std::string, std::string>{"B", "x"}));
  EXPECT_EQ(spec.environment[1], (std::pair<std::string, std::string>{"OMP_NUM_THREADS", "1"}));
}

TEST(JobSpec, DefaultsForOptionalFields) {
  JobSpec spec = parse_job_spec("name: a\ncommand: [true]\n", "s", "/tmp");
  EXPECT_EQ(spec.instance_count, 1);
  EXPECT_EQ(spec.processes_per_host, 1);
  EXPECT_EQ(spec.engine, Engine::kGloo);
  EXPECT_EQ(spec.checkpoint.local_path, "/opt/ml/checkpoints");
  EXPECT_EQ(spec.max_run_seconds, 86400);
  EXPECT_TRUE(spec.channels.empty());
}

TEST(JobSpec, SetOverridesFieldsWithYamlValues) {
  JobSpec spec = parse_job_spec("name: a\ncommand: [true]\nhyperparameters: {lr: 0.1}\n", "s", "/tmp",
                                {"instance_count=3", "hyperparameters.lr=0.5", "hyperparameters.new=\"7\"",
                                 "distribution.engine=mpi", "hyperparameters.SOLVER.BASE_LR=0.02"});
  EXPECT_EQ(spec.instance_count, 3);
  EXPECT_EQ(spec.hyperparameters["lr"], nlohmann::ordered_json(0.5));
  EXPECT_EQ(spec.hyperparameters["new"], nlohmann::ordered_json("7"));
  EXPECT_EQ(spec.hyperparameters["SOLVER.BASE_LR"], nlohmann::ordered_json(0.02)) << "one key, dots and all";
  EXPECT_EQ(spec.engine, Engine::kMpi);
}

TEST(JobSpec, ParameterServerEngineIsAccepted) {
  JobSpec spec =
      parse_job_spec("name: a\ncommand: [true]\ndistribution: {engine: parameter_server}\n", "s", "/tmp", {});
  EXPECT_EQ(spec.engine, Engine::kParameterServer);
  EXPECT_EQ(to_string(spec.engine), "parameter_server");
}

TEST(JobSpec, ReportsEveryBadFieldAtOnce) {
  const char* yaml = R"y(
name: -bad name-
instance_count: 0
processes_per_host: many
hyperparameters: [1, 2]
channels:
  training: {source: /no/such/dir, input_mode: Stream, distribution: Random, shared: maybe}
distribution: {engine: nccl}
metric_definitions:
  - {name: loss, regex: "loss ([0-9"}
  - {name: acc, regex: "no group"}
checkpoint: {local_path: /tmp/elsewhere}
max_run_seconds: -5
environment: {1BAD: x}
colour: blue
)y";
  try {
    parse_job_spec(yaml, "bad.yaml", "/tmp");
    FAIL() << "expected a JobError";
  } catch (const JobError& e) {
    std::string m = e.what();
    EXPECT_EQ(e.exit_code(), 2);
    for (const char* field :
         {"name:", "command:", "instance_count:", "processes_per_host:", "hyperparameters:",
          "channels.training.input_mode:", "channels.training.distribution:", "channels.training.shared:",
          "distribution.engine:", "metric_definitions[0].regex:", "metric_definitions[1].regex:",
          "checkpoint.local_path:", "max_run_seconds:", "environment.1BAD:", "colour:"}) {
      EXPECT_NE(m.find(std::string("\n  ") + field), std::string::npos) << field << "\n" << m;
    }
    EXPECT_NE(m.find("File, Pipe"), std::string::npos) << m;
    EXPECT_NE(m.find("FullyReplicated, ShardedByKey"), std::string::npos) << m;
    EXPECT_NE(m.find("gloo, mpi"), std::string::npos) << m;
    EXPECT_NE(m.find("15 problems"), std::string::npos) << m;
    EXPECT_EQ(m.find("channels.training.source:"), std::string::npos)
        << "a source missing on this machine is not a problem of the spec\n"
        << m;
  }
}

TEST(JobSpec, ChannelSourcesNeedNotExistButMissingOnesAreListed) {
  TempDir dir;
  std::filesystem::create_directories(dir / "here");
  JobSpec spec =
      parse_job_spec("name: a\ncommand: [x]\nchannels:\n  present: {source: here}\n  absent: {source: /no/such/dir}\n",
                     "s", dir.path());
  ASSERT_EQ(spec.channels.size(), 2u);
  EXPECT_EQ(spec.channels[0].source, "/no/such/dir");
  EXPECT_EQ(missing_channel_sources(spec),
            std::vector<std::string>{"channels.absent.source: no such directory on this machine: /no/such/dir"});
}

TEST(JobSpec, SharedChannelsCannotBeShardedOrPiped) {
  TempDir dir;
  std::filesystem::create_directories(dir / "d");
  try {
    parse_job_spec("name: a\ncommand: [x]\nchannels:\n  c: {source: d, shared: true, distribution: ShardedByKey}\n",
                   "s", dir.path().string());
    FAIL();
  } catch (const JobError& e) {
    EXPECT_NE(std::string(e.what()).find("channels.c.shared"), std::string::npos) << e.what();
  }
}

TEST(JobSpec, ElasticSectionWithDefaults) {
  JobSpec spec = parse_job_spec(
      "name: a\ncommand: [x]\ninstance_count: 4\nprocesses_per_host: 2\nelastic: {min_hosts: 2}\n", "s", "/tmp");
  ASSERT_TRUE(spec.elastic);
  EXPECT_EQ(spec.elastic->min_hosts, 2);
  EXPECT_EQ(spec.elastic->max_hosts, 4) << "max_hosts defaults to instance_count";
  EXPECT_EQ(spec.elastic->timeout_s, 600);
  EXPECT_EQ(spec.elastic->host_cooldown_s, 300);
  EXPECT_EQ(spec.elastic->reset_limit, 50);

  spec = parse_job_spec(R"y(
name: a
command: [x]
instance_count: 5
elastic: {min_hosts: 1, max_hosts: 3, timeout_s: 60.5, host_cooldown_s: 0, reset_limit: 7}
)y",
                        "s", "/tmp");
  ASSERT_TRUE(spec.elastic);
  EXPECT_EQ(spec.elastic->min_hosts, 1);
  EXPECT_EQ(spec.elastic->max_hosts, 3);
  EXPECT_EQ(spec.elastic->timeout_s, 60.5);
  EXPECT_EQ(spec.elastic->host_cooldown_s, 0);
  EXPECT_EQ(spec.elastic->reset_limit, 7);

  EXPECT_FALSE(parse_job_spec("name: a\ncommand: [x]\n", "s", "/tmp").elastic) << "fixed-size without the section";
}

TEST(JobSpec, SetEnablesAndChangesTheElasticSection) {
  JobSpec spec = parse_job_spec("name: a\ncommand: [x]\ninstance_count: 3\n", "s", "/tmp",
                                {"elastic.min_hosts=2", "elastic.reset_limit=5"});
  ASSERT_TRUE(spec.elastic);
  EXPECT_EQ(spec.elastic->min_hosts, 2);
  EXPECT_EQ(spec.elastic->max_hosts, 3);
  EXPECT_EQ(spec.elastic->reset_limit, 5);
}

// The section's problems, each naming its field, all at once (with the spec's others).
TEST(JobSpec, ElasticSectionProblemsAreReportedWithTheOthers) {
  auto problems_of = [](const std::string& yaml) {
    try {
      parse_job_spec(yaml, "bad.yaml", "/tmp");
    } catch (const JobError& e) {
      EXPECT_EQ(e.exit_code(), 2);
      return std::string(e.what());
    }
    ADD_FAILURE() << "accepted:\n" << yaml;
    return std::string();
  };
  std::string m = problems_of(R"y(
name: a
command: [x]
instance_count: 3
max_run_seconds: 0
elastic: {max_hosts: 4, timeout_s: -1, host_cooldown_s: soon, reset_limit: -2, grace: 3}
)y");
  for (const char* line :
       {"\n  max_run_seconds: must be a number of seconds > 0",
        "\n  elastic.min_hosts: required: the fewest hosts the job goes on with, 1..3 (instance_count)",
        "\n  elastic.max_hosts: must be an integer in 1..3, got '4'",
        "\n  elastic.timeout_s: must be a number of seconds >= 0, got '-1'",
        "\n  elastic.host_cooldown_s: must be a number of seconds >= 0, got 'soon'",
        "\n  elastic.reset_limit: must be an integer in 0..1000000, got '-2'", "\n  elastic.grace: unknown field"}) {
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
  }
  EXPECT_NE(m.find("7 problems"), std::string::npos) << m;

  m = problems_of("name: a\ncommand: [x]\ninstance_count: 3\nelastic: {min_hosts: 3, max_hosts: 2}\n");
  EXPECT_NE(m.find("\n  elastic.max_hosts: must be an integer in 3..3, got '2'"), std::string::npos) << m;
  m = problems_of("name: a\ncommand: [x]\ninstance_count: 2\nelastic: {min_hosts: 0}\n");
  EXPECT_NE(m.find("\n  elastic.min_hosts: must be an integer in 1..2, got '0'"), std::string::npos) << m;
  m = problems_of("name: a\ncommand: [x]\nelastic: 2\n");
  EXPECT_NE(m.find("\n  elastic: must be a mapping with min_hosts (required)"), std::string::npos) << m;
  // A bad instance_count is one problem, not a second one about min_hosts' range.
  m = problems_of("name: a\ncommand: [x]\ninstance_count: none\nelastic: {min_hosts: 2}\n");
  EXPECT_NE(m.find("1 problem in"), std::string::npos) << m;
}

TEST(JobSpec, ElasticIsRefusedWithTheMpiAndParameterServerEngines) {
  for (const char* engine : {"mpi", "parameter_server"}) {
    try {
      parse_job_spec(std::string("name: a\ncommand: [x]\ninstance_count: 2\ndistribution: {engine: ") + engine +
                         "}\nelastic: {min_hosts: 1}\n",
                     "s.yaml", "/tmp");
      ADD_FAILURE() << engine << " accepted";
    } catch (const JobError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(std::string("1 problem in the job spec:\n  elastic: not supported with distribution.engine ") +
                       engine + ": elastic jobs run over dtrain's own launcher and Gloo (use engine gloo)"),
                std::string::npos)
          << m;
    }
  }
}

TEST(JobSpec, InvalidYamlIsAUsageError) {
  try {
    parse_job_spec("name: [unclosed", "s.yaml", "/tmp");
    FAIL();
  } catch (const JobError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("s.yaml: not valid YAML"), std::string::npos);
  }
}

}  // namespace
}  // namespace dtrain::job
