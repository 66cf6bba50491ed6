#include "job/training_environment.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "job/job_error.h"

namespace dtrain::job {
namespace {

using Json = nlohmann::ordered_json;

std::optional<std::string> env_text(const char* name) {
  const char* value = std::getenv(name);
  if (!value) return std::nullopt;
  return std::string(value);
}

Json optional_json(const std::optional<std::string>& value) { return value ? Json(*value) : Json(nullptr); }

std::string module_name_of(const std::optional<std::string>& program) {
  // The toolkit stores str(None) when no program is given, and strips ".py".
  std::string name = program ? *program : "None";
  if (name.ends_with(".py")) name.resize(name.size() - 3);
  return name;
}

}  // namespace

int count_cpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int count_gpus() {
  int n = 0;
  std::error_code ec;
  for (int i = 0; i < 64; ++i) {
    if (std::filesystem::exists(fmt::format("/dev/nvidia{}", i), ec)) ++n;
  }
  return n;
}

TrainingEnvironment TrainingEnvironment::read(const ContainerLayout& layout) {
  TrainingEnvironment env;
  env.layout = layout;
  env.resource_config = read_json_file(layout.resource_config_file());
  env.input_data_config = read_json_file(layout.input_data_config_file());
  Json hp_file = read_json_file(layout.hyperparameters_file());

  const Json& rc = env.resource_config;
  if (!rc.is_object() || !rc.contains("current_host") || !rc["current_host"].is_string() || !rc.contains("hosts") ||
      !rc["hosts"].is_array() || rc["hosts"].empty()) {
    throw JobError::runtime(
        fmt::format("{}: needs current_host (a string) and hosts (a non-empty list)", layout.resource_config_file()));
  }
  env.current_host = rc["current_host"].get<std::string>();
  for (const auto& h : rc["hosts"]) env.hosts.push_back(h.get<std::string>());
  env.current_instance_type = rc.value("current_instance_type", "local");
  env.current_instance_group = rc.value("current_group_name", "homogeneousCluster");
  env.network_interface_name = rc.value("network_interface_name", "eth0");
  // The toolkit's master is the first host of the distribution hosts, which
  // SageMaker lists sorted; sort here so a hand-written file behaves the same.
  std::vector<std::string> sorted = env.hosts;
  std::sort(sorted.begin(), sorted.end());
  env.master_hostname = sorted.front();
  env.is_master = env.current_host == env.master_hostname;

  Hyperparameters all = decode_hyperparameters(hp_file);
  env.hyperparameters = Hyperparameters::object();
  env.framework_parameters = Hyperparameters::object();
  for (const auto& [key, value] : all.items()) {
    (is_framework_parameter(key) ? env.framework_parameters : env.hyperparameters)[key] = value;
  }
  if (env.input_data_config.is_object()) {
    for (const auto& item : env.input_data_config.items()) env.channels.push_back(item.key());
  }
  std::sort(env.channels.begin(), env.channels.end());

  env.user_entry_point = env_text("SAGEMAKER_PROGRAM");
  if (!env.user_entry_point && env.framework_parameters.contains("sagemaker_program")) {
    env.user_entry_point = python_str(env.framework_parameters["sagemaker_program"]);
  }
  env.job_name = env_text("TRAINING_JOB_NAME");
  env.num_cpus = count_cpus();
  env.num_gpus = count_gpus();
  return env;
}

int TrainingEnvironment::processes_per_host() const {
  auto it = framework_parameters.find("sagemaker_mpi_num_of_processes_per_host");
  if (it != framework_parameters.end() && it->is_number_integer() && it->get<int>() >= 1) {
    return it->get<int>();
  }
  return 1;
}

std::string TrainingEnvironment::engine() const {
  auto it = framework_parameters.find("sagemaker_distribution_engine");
  return it != framework_parameters.end() && it->is_string() ? it->get<std::string>() : "gloo";
}

std::string TrainingEnvironment::custom_mpi_options() const {
  auto it = framework_parameters.find("sagemaker_mpi_custom_mpi_options");
  return it != framework_parameters.end() && it->is_string() ? it->get<std::string>() : "";
}

std::optional<ElasticSpec> TrainingEnvironment::elastic() const {
  auto it = framework_parameters.find("sagemaker_elastic");
  if (it == framework_parameters.end() || it->is_null()) return std::nullopt;
  try {
    ElasticSpec elastic;
    elastic.min_hosts = it->at("min_hosts").get<int>();
    elastic.max_hosts = it->at("max_hosts").get<int>();
    elastic.timeout_s = it->value("timeout_s", elastic.timeout_s);
    elastic.host_cooldown_s = it->value("host_cooldown_s", elastic.host_cooldown_s);
    elastic.reset_limit = it->value("reset_limit", elastic.reset_limit);
    return elastic;
  } catch (const nlohmann::json::exception& e) {
    throw JobError::runtime(fmt::format("{}: sagemaker_elastic must be an object with min_hosts and max_hosts: {}",
                                        layout.hyperparameters_file(), e.what()));
  }
}

std::vector<std::string> TrainingEnvironment::user_args() const { return to_cmd_args(hyperparameters); }

Json TrainingEnvironment::training_env() const {
  Json channel_dirs = Json::object();
  for (const auto& c : channels) channel_dirs[c] = layout.channel_dir(c);
  Json groups = Json::array();
  Json groups_dict = Json::object();
  Json group_hosts = Json::array();
  if (resource_config.contains("instance_groups") && resource_config["instance_groups"].is_array()) {
    for (const auto& g : resource_config["instance_groups"]) {
      std::string name = g.value("instance_group_name", "");
      groups.push_back(name);
      groups_dict[name] = g;
      if (name == current_instance_group && g.contains("hosts")) group_hosts = g["hosts"];
    }
  }
  bool distributed = framework_parameters.value("sagemaker_mpi_enabled", false) == true;
  Json distribution_groups = Json::array();
  if (distributed) distribution_groups.push_back(current_instance_group);

  Json env = Json::object();
  env["additional_framework_parameters"] = framework_parameters;
  env["channel_input_dirs"] = channel_dirs;
  env["current_host"] = current_host;
  env["current_instance_group"] = current_instance_group;
  env["current_instance_group_hosts"] = group_hosts;
  env["current_instance_type"] = current_instance_type;
  env["distribution_hosts"] = distributed ? Json(hosts) : Json::array();
  env["distribution_instance_groups"] = distribution_groups;
  env["framework_module"] = optional_json(env_text("SAGEMAKER_TRAINING_MODULE"));
  env["hosts"] = hosts;
  env["hyperparameters"] = hyperparameters;
  env["input_config_dir"] = layout.input_config_dir();
  env["input_data_config"] = input_data_config;
  env["input_dir"] = layout.input_dir();
  env["instance_groups"] = groups;
  env["instance_groups_dict"] = groups_dict;
  env["is_hetero"] = groups.size() > 1;
  env["is_master"] = is_master;
  env["job_name"] = optional_json(job_name);
  env["log_level"] = log_level;
  env["master_hostname"] = master_hostname;
  env["model_dir"] = layout.model_dir();
  env["module_dir"] = layout.code_dir();
  env["module_name"] = module_name_of(user_entry_point);
  env["network_interface_name"] = network_interface_name;
  env["num_cpus"] = num_cpus;
  env["num_gpus"] = num_gpus;
  env["output_data_dir"] = layout.output_data_dir();
  env["output_dir"] = layout.output_dir();
  env["output_intermediate_dir"] = layout.output_intermediate_dir();
  env["resource_config"] = resource_config;
  env["user_entry_point"] = optional_json(user_entry_point);
  return env;
}

EnvList TrainingEnvironment::env_vars() const {
  Json training = training_env();
  Json user_args_json = Json::array();
  for (const auto& a : user_args()) user_args_json.push_back(a);

  // The keys of the toolkit's to_env_vars(), each becoming SM_<KEY>.
  std::map<std::string, Json> values = {
      {"hosts", hosts},
      {"network_interface_name", network_interface_name},
      {"hps", hyperparameters},
      {"user_entry_point", training["user_entry_point"]},
      {"framework_params", framework_parameters},
      {"resource_config", resource_config},
      {"input_data_config", input_data_config},
      {"output_data_dir", layout.output_data_dir()},
      {"channels", channels},
      {"current_host", current_host},
      {"current_instance_type", current_instance_type},
      {"current_instance_group", current_instance_group},
      {"current_instance_group_hosts", training["current_instance_group_hosts"]},
      {"instance_groups", training["instance_groups"]},
      {"instance_groups_dict", training["instance_groups_dict"]},
      {"distribution_instance_groups", training["distribution_instance_groups"]},
      {"is_hetero", training["is_hetero"]},
      {"module_name", training["module_name"]},
      {"log_level", log_level},
      {"framework_module", training["framework_module"]},
      {"input_dir", layout.input_dir()},
      {"input_config_dir", layout.input_config_dir()},
      {"output_dir", layout.output_dir()},
      {"num_cpus", num_cpus},
      {"num_gpus", num_gpus},
      {"model_dir", layout.model_dir()},
      {"module_dir", layout.code_dir()},
      {"training_env", training},
      {"user_args", user_args_json},
      {"output_intermediate_dir", layout.output_intermediate_dir()},
  };
  for (const auto& c : channels) values["channel_" + c] = layout.channel_dir(c);
  for (const auto& [key, value] : hyperparameters.items()) values["hp_" + key] = value;

  std::map<std::string, std::string> named;
  for (const auto& [key, value] : values) named[env_name(key)] = to_env_value(value);
  return EnvList(named.begin(), named.end());
}

}  // namespace dtrain::job
