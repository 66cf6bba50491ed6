#include "apps/dtrain/job_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <memory>
#include <thread>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "dashboard/dashboard_server.h"
#include "job/container_layout.h"
#include "job/job_error.h"
#include "job/job_report.h"
#include "job/job_spec.h"
#include "job/local_cluster.h"
#include "job/sbatch_script.h"
#include "job/slurm_host.h"

namespace dtrain::cli {
namespace {

std::string self_executable() {
  std::error_code ec;
  auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "dtrain" : path.string();
}

void add_spec_options(CLI::App* app, std::string& spec, std::vector<std::string>& overrides) {
  app->add_option("spec", spec, "Job spec (YAML)")->required()->type_name("SPEC");
  app->add_option("--set", overrides, "Override a spec field: key=value (dotted keys, YAML values)")
      ->type_name("KEY=VALUE");
}

}  // namespace

JobCommand::JobCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("job", "SageMaker-style training jobs: run locally, validate, render for Kubernetes");
  app_->require_subcommand(1);

  run_ = app_->add_subcommand(
      "run", "Run a job on local hosts algo-1..N (processes or network namespaces), or on a Slurm cluster");
  add_spec_options(run_, spec_path_, overrides_);
  run_->add_option("--backend", backend_, "Where the job runs: local (hosts on this machine) or slurm (sbatch)")
      ->type_name("BACKEND")
      ->default_val("local");
  run_->add_option("--partition", partition_, "slurm: the partition (default: the cluster's)")->type_name("NAME");
  run_->add_option("--sbatch-args", sbatch_args_, "slurm: extra sbatch arguments, passed as they are")
      ->type_name("\"ARGS\"");
  run_->add_option("--network-interface", network_interface_, "slurm: the ranks' interface (default: found)")
      ->type_name("IFACE");
  run_->add_option("--hosts", hosts_, "Host backend: process (any user) or netns (root)")
      ->type_name("KIND")
      ->default_val("process");
  run_->add_option("--work-dir", work_dir_,
                   "Where the hosts' /opt/ml roots live (default $TMPDIR/dtrain-job-NAME-PID; slurm: a shared "
                   "directory, default OUTPUT_PATH/NAME/slurm-work)")
      ->type_name("DIR");
  run_->add_flag("--keep-work-dir", keep_work_dir_, "Keep the hosts' roots after the job");
  run_->add_option("--kill-grace-s", kill_grace_s_, "Seconds between SIGTERM and SIGKILL when stopping hosts")
      ->type_name("S")
      ->default_val(10);
  run_->add_flag("--verbose", verbose_, "Log what the runner does");
  dashboard_ = run_->add_option("--dashboard", dashboard_port_,
                                "Serve the dashboard on loopback while the job runs (default port 8090; 0: any)")
                   ->expected(0, 1)
                   ->type_name("[PORT]");

  validate_ = app_->add_subcommand("validate", "Check a job spec and list every problem");
  add_spec_options(validate_, spec_path_, overrides_);

  render_ = app_->add_subcommand("render", "Write the job as a Kubernetes manifest");
  add_spec_options(render_, spec_path_, overrides_);
  render_
      ->add_option("--target", target_,
                   "What to render: kubeflow (an MPIJob, kubeflow.org/v2beta1) or slurm (a batch script)")
      ->default_val("kubeflow");
  render_
      ->add_option("--hosts-dir", hosts_dir_,
                   "slurm: the shared directory of the hosts' /opt/ml (default OUTPUT_PATH/NAME/slurm-work/hosts)")
      ->type_name("DIR");
  render_->add_option("--partition", partition_, "slurm: the partition")->type_name("NAME");
  render_->add_option("-o,--output", output_file_, "Write to FILE instead of stdout")->type_name("FILE");
  render_->add_option("--image", kubeflow_.image, "Training image")->default_val("dtrain:latest");
  render_->add_option("--namespace", namespace_, "Kubernetes namespace");
  render_->add_option("--data-claim", kubeflow_.data_claim,
                      "PersistentVolumeClaim with channels and outputs (default NAME-data)");
  render_->add_option("--cpu", kubeflow_.cpu, "CPU per worker")->default_val("2");
  render_->add_option("--memory", kubeflow_.memory, "Memory per worker")->default_val("4Gi");
  render_->add_option("--gpus", kubeflow_.gpus_per_worker, "GPUs per worker")->default_val(0);

  // Called as ssh would be: `host-exec --table FILE HOST WORDS...`, the words joined with
  // spaces into one shell command (the launcher passes one word, Open MPI's rsh launcher the
  // orted command line word by word, options included).
  host_exec_ = app_->add_subcommand("host-exec",
                                    "Run a shell command on a local job's host (used by the entry point and mpirun)");
  host_exec_->group("");         // internal: not listed in help
  host_exec_->prefix_command();  // everything after the host is the command
  host_exec_->add_option("--table", table_file_, "The job's host table")->required();
  host_exec_->add_option("host", exec_host_, "Host name")->required();

  slurm_host_ =
      app_->add_subcommand("slurm-host", "Run one node's entry point in a Slurm job (used by its batch script)");
  slurm_host_->group("");  // internal: not listed in help
  slurm_host_->add_option("--hosts-dir", hosts_dir_, "The shared directory of the hosts' /opt/ml")->required();
}

int JobCommand::execute(const std::vector<std::string>& trailing) const {
  try {
    if (run_->parsed()) return run();
    if (validate_->parsed()) return validate();
    if (render_->parsed()) return render();
    if (host_exec_->parsed()) return host_exec();
    if (slurm_host_->parsed()) return slurm_host(trailing);
  } catch (const job::JobError& e) {
    std::fprintf(stderr, "dtrain job: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain job: %s\n", e.what());
    return 1;
  }
  return 2;
}

int JobCommand::run() const {
  auto logger = spdlog::stderr_color_st("dtrain-job");
  logger->set_pattern("dtrain job: [%l] %v");
  logger->set_level(verbose_ ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_default_logger(logger);

  job::JobSpec spec = job::load_job_spec(spec_path_, overrides_);
  if (backend_ != "local" && backend_ != "slurm") {
    throw job::JobError::usage("--backend must be local or slurm, got '" + backend_ + "'");
  }
  std::unique_ptr<dashboard::DashboardServer> dashboard = start_dashboard(spec);
  if (backend_ == "slurm") {
    job::SlurmRunOptions slurm;
    slurm.dtrain_exe = self_executable();
    if (!work_dir_.empty()) slurm.work_dir = std::filesystem::absolute(work_dir_).string();
    slurm.keep_work_dir = keep_work_dir_;
    slurm.partition = partition_;
    slurm.sbatch_args = sbatch_args_;
    slurm.network_interface = network_interface_;
    const int code = job::run_slurm_job(spec, slurm);
    if (dashboard) linger_for_open_pages(*dashboard);
    return code;
  }
  job::RunOptions options;
  options.hosts = job::parse_host_kind(hosts_);
  if (!work_dir_.empty()) options.work_dir = std::filesystem::absolute(work_dir_).string();
  options.keep_work_dir = keep_work_dir_;
  options.kill_grace_s = kill_grace_s_;
  options.dtrain_exe = self_executable();
  const int code = job::run_job(spec, options);
  if (dashboard) linger_for_open_pages(*dashboard);
  return code;
}

// `--dashboard [PORT]`: the dashboard of the spec's output_path, on loopback, for this run.
std::unique_ptr<dashboard::DashboardServer> JobCommand::start_dashboard(const job::JobSpec& spec) const {
  if (dashboard_->count() == 0) return nullptr;
  int port = 8090;
  if (!dashboard_port_.empty()) {
    try {
      size_t used = 0;
      port = std::stoi(dashboard_port_, &used);
      if (used != dashboard_port_.size() || port < 0 || port > 65535) throw std::out_of_range("port");
    } catch (const std::exception&) {
      throw job::JobError::usage("--dashboard takes a port (0-65535), got '" + dashboard_port_ + "'");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(spec.output_path, ec);
  dashboard::DashboardOptions options;
  options.job_roots = {spec.output_path};
  options.port = port;
  auto server = std::make_unique<dashboard::DashboardServer>(options);
  try {
    server->bind();
  } catch (const std::exception& e) {
    throw job::JobError::usage(std::string("--dashboard: ") + e.what());
  }
  server->start();
  std::printf("dtrain job %s: dashboard at %s#/job/%s\n", spec.name.c_str(), server->url().c_str(), spec.name.c_str());
  std::fflush(stdout);
  return server;
}

// A page open on the dashboard polls every second: keep serving after the job's end until it
// has asked again (so it shows the end) and 3 s have passed (a page that was navigating
// polls anew by then), at most 10 s; not at all when no page ever asked.
void JobCommand::linger_for_open_pages(const dashboard::DashboardServer& server) const {
  const uint64_t at_end = server.api_requests();
  if (at_end == 0) return;
  const auto ended = std::chrono::steady_clock::now();
  while (true) {
    const auto elapsed = std::chrono::steady_clock::now() - ended;
    const bool seen = server.api_requests() >= at_end + 2 && elapsed >= std::chrono::seconds(3);
    if (seen || elapsed >= std::chrono::seconds(10)) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int JobCommand::validate() const {
  job::JobSpec spec = job::load_job_spec(spec_path_, overrides_);
  std::printf("%s: valid job %s (%d host%s x %d process%s, %zu channel%s)\n", spec_path_.c_str(), spec.name.c_str(),
              spec.instance_count, spec.instance_count == 1 ? "" : "s", spec.processes_per_host,
              spec.processes_per_host == 1 ? "" : "es", spec.channels.size(), spec.channels.size() == 1 ? "" : "s");
  // A spec is valid without its channel sources on this machine (a rendered job reads its
  // channels from its own volume), but a local run stages them from here: say so now.
  for (const auto& missing : job::missing_channel_sources(spec)) {
    std::fprintf(stderr, "dtrain job: note: %s (needed by dtrain job run)\n", missing.c_str());
  }
  return 0;
}

int JobCommand::render() const {
  if (target_ != "kubeflow" && target_ != "slurm") {
    throw job::JobError::usage("--target must be kubeflow or slurm, got '" + target_ + "'");
  }
  job::JobSpec spec = job::load_job_spec(spec_path_, overrides_);
  std::string manifest;
  if (target_ == "slurm") {
    job::SbatchOptions options;
    options.dtrain_exe = self_executable();
    options.hosts_dir = hosts_dir_.empty() ? spec.output_path + "/" + spec.name + "/slurm-work/hosts"
                                           : std::filesystem::absolute(hosts_dir_).string();
    options.partition = partition_;
    manifest = job::render_sbatch_script(spec, options);
  } else {
    job::KubeflowOptions options = kubeflow_;
    if (!namespace_.empty()) options.namespace_name = namespace_;
    manifest = job::render_mpijob(spec, options);
  }
  if (output_file_.empty()) {
    std::fwrite(manifest.data(), 1, manifest.size(), stdout);
  } else {
    job::write_text_file(output_file_, manifest);
  }
  return 0;
}

int JobCommand::host_exec() const {
  std::string command;
  for (const auto& word : host_exec_->remaining()) command += (command.empty() ? "" : " ") + word;
  if (command.empty()) {
    std::fprintf(stderr, "dtrain job host-exec: missing command after host %s\n", exec_host_.c_str());
    return 2;
  }
  auto hosts = job::hosts_from_table(job::read_json_file(table_file_));
  for (const auto& h : hosts) {
    if (h.name != exec_host_) continue;
    // A host whose entry point failed is down (an elastic job's lost host): answer as ssh does
    // for a host it cannot reach, so the launcher sets it aside instead of failing the job.
    const std::string failure = job::read_if_exists(job::ContainerLayout(h.root).failure_file());
    if (!failure.empty()) {
      std::fprintf(stderr, "dtrain job host-exec: %s is down: %s\n", exec_host_.c_str(), failure.c_str());
      return 255;
    }
    ::setenv("SAGEMAKER_BASE_DIR", h.root.c_str(), 1);
    // The hosts share one host name, /tmp and /dev/shm; Open MPI's daemon and ranks started
    // here by mpirun would name their files as another host's do (see LocalHost::shm_dir).
    if (!h.shm_dir.empty()) {
      ::setenv("OMPI_MCA_orte_tmpdir_base", h.shm_dir.c_str(), 0);
      ::setenv("OMPI_MCA_btl_vader_backing_directory", h.shm_dir.c_str(), 0);
    }
    std::vector<std::string> argv;
    if (!h.netns.empty()) argv = {"ip", "netns", "exec", h.netns};
    argv.insert(argv.end(), {"/bin/sh", "-c", command});
    std::vector<char*> c_argv;
    for (auto& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    ::execvp(c_argv[0], c_argv.data());
    std::fprintf(stderr, "dtrain job host-exec: cannot execute %s: %s\n", c_argv[0], std::strerror(errno));
    return 127;
  }
  std::fprintf(stderr, "dtrain job host-exec: no host %s in %s\n", exec_host_.c_str(), table_file_.c_str());
  return 255;
}

int JobCommand::slurm_host(const std::vector<std::string>& command) const {
  return job::exec_slurm_host(self_executable(), hosts_dir_, command);
}

}  // namespace dtrain::cli
