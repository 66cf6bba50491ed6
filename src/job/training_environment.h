#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/container_layout.h"
#include "job/hyperparameters.h"
#include "job/job_spec.h"

namespace dtrain::job {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// What SageMaker's training toolkit derives from the container's files and
// environment (its Environment class), read from one ContainerLayout.
// Produces the SM_* variables and the hyperparameters as arguments exactly
// as the toolkit does.
struct TrainingEnvironment {
  ContainerLayout layout{"/opt/ml"};
  std::string current_host;
  std::string current_instance_type;
  std::string current_instance_group;
  std::vector<std::string> hosts;
  std::string network_interface_name;
  std::string master_hostname;
  bool is_master = false;
  Hyperparameters hyperparameters;       // the user's (no sagemaker_* keys)
  Hyperparameters framework_parameters;  // the sagemaker_* keys
  nlohmann::ordered_json resource_config;
  nlohmann::ordered_json input_data_config;
  std::vector<std::string> channels;            // sorted
  std::optional<std::string> user_entry_point;  // SAGEMAKER_PROGRAM / sagemaker_program
  std::optional<std::string> job_name;          // TRAINING_JOB_NAME
  int num_cpus = 1;
  int num_gpus = 0;
  int log_level = 20;

  // Reads the three configuration files under `layout` and the process
  // environment. Throws JobError naming the file at fault.
  static TrainingEnvironment read(const ContainerLayout& layout);

  int processes_per_host() const;          // sagemaker_mpi_num_of_processes_per_host, default 1
  std::string engine() const;              // sagemaker_distribution_engine, default "gloo"
  std::string custom_mpi_options() const;  // sagemaker_mpi_custom_mpi_options
  // sagemaker_elastic (dtrain's own): the spec's elastic section; nullopt for a fixed-size job.
  // Throws JobError when it is there but malformed.
  std::optional<ElasticSpec> elastic() const;

  // The hyperparameters as the algorithm's arguments (mapping.to_cmd_args).
  std::vector<std::string> user_args() const;

  // Every SM_* variable the toolkit exports, sorted by name.
  EnvList env_vars() const;

  // The toolkit's dict(env): SM_TRAINING_ENV.
  nlohmann::ordered_json training_env() const;
};

int count_cpus();
int count_gpus();

}  // namespace dtrain::job
