#include "job/kubeflow_manifest.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "job/hyperparameters.h"
#include "job/job_error.h"
#include "launch/ssh_command.h"

namespace dtrain::job {
namespace {

using EnvPairs = std::vector<std::pair<std::string, std::string>>;

EnvPairs algorithm_env(const JobSpec& spec, const KubeflowOptions& options) {
  std::string job_dir = fmt::format("{}/jobs/{}", options.data_mount, spec.name);
  nlohmann::ordered_json channels = nlohmann::ordered_json::array();
  for (const auto& c : spec.channels) channels.push_back(c.name);
  nlohmann::ordered_json user_args = nlohmann::ordered_json::array();
  for (const auto& a : to_cmd_args(spec.hyperparameters)) user_args.push_back(a);

  EnvPairs env = {
      {"TRAINING_JOB_NAME", spec.name},
      {"SM_MODEL_DIR", job_dir + "/model"},
      {"SM_OUTPUT_DIR", job_dir + "/output"},
      {"SM_OUTPUT_DATA_DIR", job_dir + "/output/data"},
      {"SM_CHECKPOINT_DIR", job_dir + "/checkpoints"},
      {"SM_CHANNELS", python_json_dumps(channels)},
      {"SM_HPS", python_json_dumps(spec.hyperparameters)},
      {"SM_USER_ARGS", python_json_dumps(user_args)},
      {"SM_NUM_GPUS", std::to_string(options.gpus_per_worker)},
  };
  for (const auto& c : spec.channels) {
    env.emplace_back(env_name("channel_" + c.name), fmt::format("{}/channels/{}", options.data_mount, c.name));
  }
  for (const auto& [key, value] : spec.hyperparameters.items()) {
    env.emplace_back(env_name("hp_" + key), to_env_value(value));
  }
  for (const auto& kv : spec.environment) env.push_back(kv);
  return env;
}

void emit_env(YAML::Emitter& out, const EnvPairs& env) {
  out << YAML::Key << "env" << YAML::Value << YAML::BeginSeq;
  for (const auto& [name, value] : env) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name << YAML::Key << "value" << YAML::Value
        << YAML::DoubleQuoted << value << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emit_strings(YAML::Emitter& out, const std::string& key, const std::vector<std::string>& words) {
  out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& w : words) out << YAML::DoubleQuoted << w;
  out << YAML::EndSeq;
}

void emit_volume_mount(YAML::Emitter& out, const KubeflowOptions& options) {
  out << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name"
      << YAML::Value << "data" << YAML::Key << "mountPath" << YAML::Value << options.data_mount << YAML::EndMap
      << YAML::EndSeq;
}

void emit_volumes(YAML::Emitter& out, const std::string& claim) {
  out << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << "data" << YAML::Key << "persistentVolumeClaim" << YAML::Value << YAML::BeginMap << YAML::Key << "claimName"
      << YAML::Value << claim << YAML::EndMap << YAML::EndMap << YAML::EndSeq;
}

void emit_labels(YAML::Emitter& out, const std::string& name) {
  out << YAML::Key << "labels" << YAML::Value << YAML::BeginMap << YAML::Key << "app.kubernetes.io/name" << YAML::Value
      << "dtrain" << YAML::Key << "dtrain/job" << YAML::Value << name << YAML::EndMap;
}

void emit_resources(YAML::Emitter& out, const std::string& cpu, const std::string& memory, int gpus) {
  out << YAML::Key << "resources" << YAML::Value << YAML::BeginMap;
  for (const char* kind : {"requests", "limits"}) {
    out << YAML::Key << kind << YAML::Value << YAML::BeginMap << YAML::Key << "cpu" << YAML::Value << YAML::DoubleQuoted
        << cpu << YAML::Key << "memory" << YAML::Value << memory;
    if (gpus > 0) out << YAML::Key << "nvidia.com/gpu" << YAML::Value << gpus;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
}

}  // namespace

std::string kubernetes_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    out += (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-';
  }
  while (!out.empty() && out.front() == '-') out.erase(0, 1);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "dtrain-job" : out.substr(0, 63);
}

// One entry of mpiReplicaSpecs: a pod template with one container.
struct Replica {
  const char* role;  // the key: Launcher or Worker
  int replicas;
  const char* container;
  std::vector<std::string> command;
  std::string cpu, memory;
  int gpus;
};

void emit_replica(YAML::Emitter& out, const Replica& r, const std::string& name, const std::string& claim,
                  const EnvPairs& env, const KubeflowOptions& options) {
  out << YAML::Key << r.role << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "replicas" << YAML::Value << r.replicas;
  out << YAML::Key << "restartPolicy" << YAML::Value << "Never";
  out << YAML::Key << "template" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  emit_labels(out, name);
  out << YAML::EndMap;
  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << r.container;
  out << YAML::Key << "image" << YAML::Value << options.image;
  out << YAML::Key << "imagePullPolicy" << YAML::Value << "IfNotPresent";
  emit_strings(out, "command", r.command);
  emit_env(out, env);
  emit_resources(out, r.cpu, r.memory, r.gpus);
  emit_volume_mount(out, options);
  out << YAML::EndMap << YAML::EndSeq;
  emit_volumes(out, claim);
  out << YAML::EndMap;  // spec
  out << YAML::EndMap;  // template
  out << YAML::EndMap;  // the role
}

std::string render_mpijob(const JobSpec& spec, const KubeflowOptions& options) {
  if (spec.elastic) {
    throw JobError::usage(
        "elastic: not supported by --target kubeflow: an MPIJob (kubeflow.org/v2beta1) has no elastic policy (its "
        "workers are fixed, a failed worker pod is not replaced); drop the elastic section to render it fixed-size");
  }
  std::string name = kubernetes_name(spec.name);
  std::string claim = options.data_claim.empty() ? name + "-data" : options.data_claim;
  EnvPairs env = algorithm_env(spec, options);
  int np = spec.instance_count * spec.processes_per_host;

  std::vector<std::string> launcher_command = {"dtrain", "run"};
  if (spec.engine == Engine::kMpi) {
    // mpirun over the MPIJob's ssh, as Kubeflow intends; the ranks use the MPI engine.
    launcher_command.push_back("--mpi");
    if (!spec.custom_mpi_options.empty()) {
      launcher_command.insert(launcher_command.end(), {"--mpi-args", spec.custom_mpi_options});
    }
  } else if (spec.engine == Engine::kParameterServer) {
    // A parameter server on every worker pod beside its ranks, started over ssh like them.
    launcher_command.push_back("--ps");
  }
  launcher_command.insert(launcher_command.end(), {"--hostfile", "/etc/mpi/hostfile", "-np", std::to_string(np), "--"});
  size_t program_index = launcher_command.size();
  launcher_command.insert(launcher_command.end(), spec.command.begin(), spec.command.end());
  // A program given by a path on this machine (../build/apps/x) is on the image's PATH.
  std::string& program = launcher_command[program_index];
  if (program.starts_with("/")) program = program.substr(program.rfind('/') + 1);
  for (const auto& a : to_cmd_args(spec.hyperparameters)) launcher_command.push_back(a);
  // sshd does not pass the container's environment to the ranks it starts;
  // pam_env reads /etc/environment, so the worker writes the SM_* there first.
  std::string worker_script =
      "env | grep -E '^(SM_|TRAINING_JOB_NAME|DTRAIN_)' >> /etc/environment; "
      "mkdir -p /run/sshd; exec /usr/sbin/sshd -De";

  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "kubeflow.org/v2beta1";
  out << YAML::Key << "kind" << YAML::Value << "MPIJob";
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << name;
  if (options.namespace_name) out << YAML::Key << "namespace" << YAML::Value << *options.namespace_name;
  emit_labels(out, name);
  out << YAML::EndMap;

  out << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "slotsPerWorker" << YAML::Value << spec.processes_per_host;
  out << YAML::Key << "runPolicy" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "cleanPodPolicy" << YAML::Value << "Running";
  out << YAML::Key << "backoffLimit" << YAML::Value << 0;
  out << YAML::Key << "activeDeadlineSeconds" << YAML::Value << static_cast<long long>(spec.max_run_seconds);
  out << YAML::EndMap;
  out << YAML::Key << "sshAuthMountPath" << YAML::Value << "/root/.ssh";
  out << YAML::Key << "launcherCreationPolicy" << YAML::Value << "WaitForWorkersReady";
  out << YAML::Key << "mpiImplementation" << YAML::Value << "OpenMPI";
  out << YAML::Key << "mpiReplicaSpecs" << YAML::Value << YAML::BeginMap;

  // Launcher: runs the launcher over ssh to the workers.
  emit_replica(out, {"Launcher", 1, "launcher", launcher_command, "1", "1Gi", 0}, name, claim, env, options);
  // Workers: sshd, where the launcher starts processes_per_host ranks each.
  emit_replica(out,
               {"Worker",
                spec.instance_count,
                "worker",
                {"/bin/sh", "-c", worker_script},
                options.cpu,
                options.memory,
                options.gpus_per_worker},
               name, claim, env, options);

  out << YAML::EndMap;  // mpiReplicaSpecs
  out << YAML::EndMap;  // spec
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace dtrain::job
