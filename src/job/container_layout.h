#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/hyperparameters.h"

namespace dtrain::job {

struct JobSpec;

// The directory tree of SageMaker's container contract under one base
// directory (/opt/ml in a container, a per-host root on this machine):
//   input/config/{hyperparameters,resourceconfig,inputdataconfig}.json
//   input/data/<channel>     model/     output/{success,failure,data/}
//   checkpoints/             code/
class ContainerLayout {
 public:
  explicit ContainerLayout(std::string base_dir);

  // SAGEMAKER_BASE_DIR when set, else /opt/ml.
  static std::string default_base_dir();

  const std::string& base_dir() const { return base_; }
  std::string input_dir() const { return base_ + "/input"; }
  std::string input_config_dir() const { return base_ + "/input/config"; }
  std::string input_data_dir() const { return base_ + "/input/data"; }
  std::string channel_dir(const std::string& channel) const { return input_data_dir() + "/" + channel; }
  std::string model_dir() const { return base_ + "/model"; }
  std::string output_dir() const { return base_ + "/output"; }
  std::string output_data_dir() const { return base_ + "/output/data"; }
  std::string output_intermediate_dir() const { return base_ + "/output/intermediate"; }
  std::string code_dir() const { return base_ + "/code"; }
  std::string success_file() const { return base_ + "/output/success"; }
  std::string failure_file() const { return base_ + "/output/failure"; }
  std::string hyperparameters_file() const { return input_config_dir() + "/hyperparameters.json"; }
  std::string resource_config_file() const { return input_config_dir() + "/resourceconfig.json"; }
  std::string input_data_config_file() const { return input_config_dir() + "/inputdataconfig.json"; }

  // A container path ("/opt/ml/checkpoints") inside this layout.
  std::string container_path(const std::string& opt_ml_path) const;

 private:
  std::string base_;
};

// resourceconfig.json: which host this is and who the others are.
struct ResourceConfig {
  std::string current_host;
  std::string current_instance_type = "local";
  std::string current_group_name = "homogeneousCluster";
  std::vector<std::string> hosts;  // sorted
  std::string network_interface_name = "eth0";

  nlohmann::ordered_json to_json() const;
};

// The three configuration files of one host.
struct ContainerConfig {
  nlohmann::ordered_json hyperparameters_file;  // name -> JSON-encoded string
  ResourceConfig resource;
  nlohmann::ordered_json input_data_config;
};

// hyperparameters.json for a job: the user's hyperparameters plus the
// framework parameters the toolkit reads (sagemaker_mpi_enabled,
// sagemaker_mpi_num_of_processes_per_host, sagemaker_mpi_custom_mpi_options,
// sagemaker_distribution_engine; sagemaker_elastic, an object, for an elastic job), every
// value JSON-encoded as the SDK does.
nlohmann::ordered_json hyperparameters_file_for(const JobSpec& spec);

// inputdataconfig.json for a job's channels.
nlohmann::ordered_json input_data_config_for(const JobSpec& spec);

// Creates the tree and writes the configuration files. Throws JobError.
void write_container_config(const ContainerLayout& layout, const ContainerConfig& config);

// Writes `text` to `path` (truncating), creating parent directories.
void write_text_file(const std::string& path, const std::string& text);

// Reads a whole file; throws JobError naming the file when it cannot.
std::string read_text_file(const std::string& path);

// Parses a JSON file; throws JobError naming the file.
nlohmann::ordered_json read_json_file(const std::string& path);

}  // namespace dtrain::job
