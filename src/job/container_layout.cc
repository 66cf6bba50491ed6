#include "job/container_layout.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "job/job_error.h"
#include "job/job_spec.h"

namespace dtrain::job {

namespace fs = std::filesystem;

ContainerLayout::ContainerLayout(std::string base_dir) : base_(std::move(base_dir)) {
  while (base_.size() > 1 && base_.back() == '/') base_.pop_back();
}

std::string ContainerLayout::default_base_dir() {
  const char* env = std::getenv("SAGEMAKER_BASE_DIR");
  return env && *env ? env : "/opt/ml";
}

std::string ContainerLayout::container_path(const std::string& opt_ml_path) const {
  std::string_view prefix = "/opt/ml";
  if (opt_ml_path.starts_with(prefix)) return base_ + opt_ml_path.substr(prefix.size());
  return opt_ml_path;
}

nlohmann::ordered_json ResourceConfig::to_json() const {
  nlohmann::ordered_json j;
  j["current_host"] = current_host;
  j["current_instance_type"] = current_instance_type;
  j["current_group_name"] = current_group_name;
  j["hosts"] = hosts;
  j["instance_groups"] = nlohmann::ordered_json::array(
      {{{"instance_group_name", current_group_name}, {"instance_type", current_instance_type}, {"hosts", hosts}}});
  j["network_interface_name"] = network_interface_name;
  return j;
}

nlohmann::ordered_json hyperparameters_file_for(const JobSpec& spec) {
  nlohmann::ordered_json file = nlohmann::ordered_json::object();
  for (const auto& [key, value] : spec.hyperparameters.items()) {
    file[key] = encode_hyperparameter(value);
  }
  file["sagemaker_mpi_enabled"] = encode_hyperparameter(true);
  file["sagemaker_mpi_num_of_processes_per_host"] = encode_hyperparameter(spec.processes_per_host);
  file["sagemaker_mpi_custom_mpi_options"] = encode_hyperparameter(spec.custom_mpi_options);
  file["sagemaker_distribution_engine"] = encode_hyperparameter(to_string(spec.engine));
  file["sagemaker_job_name"] = encode_hyperparameter(spec.name);
  if (spec.elastic) {
    // dtrain's own: the master's launcher reads it (TrainingEnvironment::elastic).
    file["sagemaker_elastic"] =
        encode_hyperparameter(nlohmann::ordered_json{{"min_hosts", spec.elastic->min_hosts},
                                                     {"max_hosts", spec.elastic->max_hosts},
                                                     {"timeout_s", spec.elastic->timeout_s},
                                                     {"host_cooldown_s", spec.elastic->host_cooldown_s},
                                                     {"reset_limit", spec.elastic->reset_limit}});
  }
  return file;
}

nlohmann::ordered_json input_data_config_for(const JobSpec& spec) {
  nlohmann::ordered_json config = nlohmann::ordered_json::object();
  for (const auto& channel : spec.channels) {
    nlohmann::ordered_json c;
    if (channel.content_type) c["ContentType"] = *channel.content_type;
    c["TrainingInputMode"] = to_string(channel.input_mode);
    c["S3DistributionType"] = to_string(channel.distribution);
    c["RecordWrapperType"] = "None";
    config[channel.name] = c;
  }
  return config;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw JobError::runtime(fmt::format("cannot write {}", path));
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JobError::runtime(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::ordered_json read_json_file(const std::string& path) {
  std::string text = read_text_file(path);
  auto parsed = nlohmann::ordered_json::parse(text, nullptr, false);
  if (parsed.is_discarded()) throw JobError::runtime(fmt::format("{}: not valid JSON", path));
  return parsed;
}

void write_container_config(const ContainerLayout& layout, const ContainerConfig& config) {
  for (const auto& dir : {layout.input_config_dir(), layout.input_data_dir(), layout.model_dir(),
                          layout.output_data_dir(), layout.output_intermediate_dir(), layout.code_dir()}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw JobError::runtime(fmt::format("cannot create {}: {}", dir, ec.message()));
  }
  write_text_file(layout.hyperparameters_file(), config.hyperparameters_file.dump(2) + "\n");
  write_text_file(layout.resource_config_file(), config.resource.to_json().dump(2) + "\n");
  write_text_file(layout.input_data_config_file(), config.input_data_config.dump(2) + "\n");
}

}  // namespace dtrain::job
