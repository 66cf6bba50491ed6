#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "dashboard/dashboard_server.h"
#include "job/job_runner.h"
#include "job/slurm_job_runner.h"
#include "job/kubeflow_manifest.h"

namespace dtrain::cli {

// `dtrain job run SPEC [--set key=value]... [--hosts process|netns]`: runs a
// SageMaker-style job on this machine (see docs/jobs.md); with `--backend slurm` it submits
// the job to a Slurm cluster and follows it (docs/slurm.md).
// `dtrain job validate SPEC`: checks a spec and lists every problem.
// `dtrain job render --target kubeflow|slurm SPEC [-o FILE]`: the job as a Kubeflow MPIJob
// or as a Slurm batch script.
// `dtrain job host-exec --table FILE HOST COMMAND`: runs a shell command "on"
// one of a local job's hosts (the launcher's agent instead of ssh).
// `dtrain job slurm-host --hosts-dir DIR -- COMMAND`: one node's entry point in a Slurm job.
// Exit status: run returns the job's (the algorithm's) exit code; bad specs
// and usage errors exit 2 with every problem listed.
class JobCommand {
 public:
  explicit JobCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }
  // `trailing`: the words after "--" (slurm-host's command).
  int execute(const std::vector<std::string>& trailing) const;

 private:
  int run() const;
  std::unique_ptr<dashboard::DashboardServer> start_dashboard(const job::JobSpec& spec) const;
  void linger_for_open_pages(const dashboard::DashboardServer& server) const;
  int validate() const;
  int render() const;
  int host_exec() const;
  int slurm_host(const std::vector<std::string>& command) const;

  CLI::App* app_;
  CLI::App* run_;
  CLI::App* validate_;
  CLI::App* render_;
  CLI::App* host_exec_;
  CLI::App* slurm_host_;

  std::string spec_path_;
  std::vector<std::string> overrides_;
  std::string hosts_ = "process";
  std::string work_dir_;
  bool keep_work_dir_ = false;
  double kill_grace_s_ = 10;
  bool verbose_ = false;
  CLI::Option* dashboard_ = nullptr;
  std::string dashboard_port_;
  std::string backend_ = "local";
  std::string partition_;
  std::string sbatch_args_;
  std::string network_interface_;
  std::string hosts_dir_;

  std::string target_ = "kubeflow";
  std::string output_file_;
  job::KubeflowOptions kubeflow_;
  std::string namespace_;

  std::string table_file_;
  std::string exec_host_;
};

}  // namespace dtrain::cli
