#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "job/hyperparameters.h"

namespace dtrain::job {

enum class InputMode { kFile, kPipe };
enum class Distribution { kFullyReplicated, kShardedByKey };
enum class Engine { kGloo, kMpi, kParameterServer };

// One input data channel: a directory made available to every host as
// input/data/<name> (or as FIFOs in Pipe mode). `dtrain job run` stages it
// from this machine; a rendered job mounts its own copy instead.
struct ChannelSpec {
  std::string name;
  std::string source;  // absolute path
  InputMode input_mode = InputMode::kFile;
  Distribution distribution = Distribution::kFullyReplicated;
  bool shared = false;  // the same directory on every host (EFS/FSx), no copy
  std::optional<std::string> content_type;
};

struct MetricDefinition {
  std::string name;
  std::string regex;
};

struct CheckpointSpec {
  std::string local_path = "/opt/ml/checkpoints";
  std::optional<std::string> sync_to;  // absolute path
};

// An elastic job (docs/elastic.md): the launcher on algo-1 goes on while at least min_hosts
// hosts' workers live. The hosts are still algo-1..instance_count; processes_per_host times
// min_hosts / max_hosts become the launcher's --min-np / --max-np.
struct ElasticSpec {
  int min_hosts = 1;             // required to enable the section
  int max_hosts = 1;             // default: instance_count
  double timeout_s = 600;        // --elastic-timeout: below min_hosts this long fails the job
  double host_cooldown_s = 300;  // --host-cooldown
  int reset_limit = 50;          // --reset-limit
};

// A training job as its YAML spec describes it (see docs/jobs.md).
struct JobSpec {
  std::string name;
  std::vector<std::string> command;
  int instance_count = 1;
  std::string instance_type = "local";
  int processes_per_host = 1;
  Hyperparameters hyperparameters = Hyperparameters::object();
  std::vector<ChannelSpec> channels;  // sorted by name
  Engine engine = Engine::kGloo;
  std::string custom_mpi_options;
  std::vector<MetricDefinition> metric_definitions;
  CheckpointSpec checkpoint;
  std::string output_path;  // absolute path
  double max_run_seconds = 86400;
  std::vector<std::pair<std::string, std::string>> environment;  // sorted by name
  std::optional<ElasticSpec> elastic;                            // the `elastic:` section; gloo engine only
};

// Parses and validates a spec. Relative paths are resolved against
// `base_dir` (the spec file's directory). `overrides` are "key=value" with a
// dotted key ("instance_count=3", "hyperparameters.lr=0.01"); the value is
// read as YAML. Every problem is collected and reported at once in one
// JobError (usage) whose message has one line per field, naming the field
// and what is allowed.
JobSpec parse_job_spec(std::string_view yaml_text, std::string_view origin, const std::string& base_dir,
                       const std::vector<std::string>& overrides = {});

// Reads a spec file and parses it (base_dir: the file's directory).
JobSpec load_job_spec(const std::string& path, const std::vector<std::string>& overrides = {});

// One line per channel whose source is not a directory on this machine
// ("channels.training.source: no such directory on this machine: /data/x").
// Parsing leaves this out because only `dtrain job run` reads the sources
// here; a rendered Kubernetes job reads its channels from its own volume.
std::vector<std::string> missing_channel_sources(const JobSpec& spec);

std::string to_string(InputMode mode);             // "File", "Pipe"
std::string to_string(Distribution distribution);  // "FullyReplicated", "ShardedByKey"
std::string to_string(Engine engine);              // "gloo", "mpi", "parameter_server"

}  // namespace dtrain::job
