#pragma once

#include <optional>
#include <string>

#include "job/job_spec.h"

namespace dtrain::job {

// Cluster settings a job spec does not carry.
struct KubeflowOptions {
  std::string image = "dtrain:latest";
  std::optional<std::string> namespace_name;
  std::string data_claim;            // PVC with the channels and outputs; default <name>-data
  std::string data_mount = "/data";  // where every pod mounts it
  std::string cpu = "2";             // per worker
  std::string memory = "4Gi";
  int gpus_per_worker = 0;
};

// The job as a Kubeflow MPIJob (kubeflow.org/v2beta1): one Launcher pod
// running `dtrain run --hostfile /etc/mpi/hostfile -np N -- <command>
// <hyperparameters as arguments>` over ssh (a program given by an absolute
// path is taken by its file name, from the image's PATH), instance_count Worker pods
// running sshd with slotsPerWorker = processes_per_host, a shared PVC for the
// channels (<mount>/channels/<name>) and the job's outputs
// (<mount>/jobs/<name>/{model,output,checkpoints}), the SM_* variables the
// algorithm reads, runPolicy cleanPodPolicy Running with
// activeDeadlineSeconds = max_run_seconds, and
// launcherCreationPolicy WaitForWorkersReady. Returns YAML text. Throws JobError (usage)
// for an elastic job: an MPIJob has no elastic policy.
std::string render_mpijob(const JobSpec& spec, const KubeflowOptions& options);

// A Kubernetes object name from a job name (lower case, [a-z0-9-]).
std::string kubernetes_name(const std::string& name);

}  // namespace dtrain::job
