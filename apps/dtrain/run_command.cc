#include "apps/dtrain/run_command.h"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "launch/launch_error.h"
#include "launch/launch_job.h"

namespace dtrain::cli {

RunCommand::RunCommand(CLI::App& parent) {
  app_ = parent.add_subcommand(
      "run", "Start a command as N ranks on local or ssh-reachable hosts (like mpirun), or through srun");
  app_->footer(
      "Usage: dtrain run [options] -- command args...\n"
      "The command may also follow the options without \"--\" when it cannot be\n"
      "mistaken for an option. Exit status: 0 when every rank succeeds, 1 when a\n"
      "rank fails, 2 for usage errors, 128+N when stopped by signal N.\n");
  // Everything from the first argument that is not an option is the command.
  app_->prefix_command();

  auto value = [this](const std::string& names, auto& target, const std::string& help) {
    CLI::Option* opt = app_->add_option(names, target, help);
    for (const auto& n : opt->get_lnames()) value_options_.push_back("--" + n);
    for (const auto& n : opt->get_snames()) value_options_.push_back("-" + n);
    return opt;
  };

  value("--np", np_, "Number of ranks (also -np); default: all slots, or 1")->type_name("N");
  value("-H,--hosts", host_list_, "Hosts and slots: host1:2,host2:4 (default localhost:N)")->type_name("HOSTS");
  value("--hostfile", hostfile_, "File with one 'host slots=N' per line")->type_name("FILE");
  value("--network-interface", iface_, "Interface for rendezvous and collectives (exported as DTRAIN_IFACE)")
      ->type_name("IFACE");
  value("--start-timeout", options_.start_timeout_s, "Seconds a rank may take to reach rendezvous (0: no limit)")
      ->type_name("S")
      ->default_val(30);
  value("--output-filename", output_dir_, "Also write raw output to DIR/rank.N/{stdout,stderr}")->type_name("DIR");
  value("--rank-status-file", rank_status_file_,
        "Keep each rank's state (pid, rendezvous, exit code or signal) in this JSON file while the job runs "
        "(ranks dtrain starts itself: not with --mpi or --slurm, whose ranks mpirun or srun start)")
      ->type_name("PATH");
  value("--timeline-filename", timeline_, "Timeline file (DTRAIN_TIMELINE)")->type_name("PATH");
  app_->add_flag("--timeline-mark-cycles", options_.timeline_mark_cycles,
                 "Mark each negotiation cycle that had work in the timeline (DTRAIN_TIMELINE_MARK_CYCLES)");
  app_->add_flag("--autotune", options_.autotune,
                 "Tune the fusion threshold and cycle time while training runs, then keep the best (DTRAIN_AUTOTUNE)");
  value("--autotune-log-file", autotune_log_, "CSV of every autotuning sample (DTRAIN_AUTOTUNE_LOG)")
      ->type_name("PATH");
  value("--fusion-threshold-mb", fusion_mb_, "Tensor fusion buffer size (DTRAIN_FUSION_THRESHOLD)")->type_name("MB");
  value("--cycle-time-ms", cycle_ms_, "Background cycle time (DTRAIN_CYCLE_TIME_MS)")->type_name("MS");
  value("--stall-warning-s", stall_warning_, "Stall warning after S seconds (DTRAIN_STALL_WARNING_S)")->type_name("S");
  value("--stall-shutdown-s", stall_shutdown_, "Shut down after a stall of S seconds (DTRAIN_STALL_SHUTDOWN_S)")
      ->type_name("S");
  value("-p,--ssh-port", ssh_port_, "ssh port for remote hosts")->type_name("PORT");
  value("-i,--ssh-identity-file", identity_file_, "ssh identity file for remote hosts")->type_name("KEYFILE");
  value("--kill-grace-s", options_.kill_grace_s, "Seconds between SIGTERM and SIGKILL when stopping workers")
      ->type_name("S")
      ->default_val(5);
  app_->add_flag("--verbose", options_.verbose, "Debug logging in the launcher and the workers");
  auto* mpi = app_->add_flag("--mpi", options_.use_mpi,
                             "Start the job with Open MPI's mpirun; ranks negotiate and move data over MPI");
  auto* gloo = app_->add_flag("--gloo", use_gloo_, "Start the job with dtrain's own launcher and Gloo (the default)");
  mpi->excludes(gloo);
  value("--mpi-args", options_.mpi_args, "Extra mpirun arguments, passed as they are (with --mpi)")
      ->type_name("\"ARGS\"");
  app_->add_flag("--slurm", options_.use_slurm,
                 "Inside a Slurm allocation (salloc, sbatch): start the ranks as one srun step on its nodes "
                 "(-np defaults to SLURM_NTASKS)");
  value("--slurm-args", options_.slurm_args, "Extra srun arguments, passed as they are (with --slurm)")
      ->type_name("\"ARGS\"");
  value("--min-np", min_np_, "Elastic job: go on while at least N workers live (docs/elastic.md)")->type_name("N");
  value("--max-np", max_np_, "Elastic job: at most N workers (default: -np, else all slots)")->type_name("N");
  value("--host-discovery-script", discovery_script_,
        "Elastic job: a script printing the usable hosts, one 'host[:slots]' per line, run every second")
      ->type_name("SCRIPT");
  value("--elastic-timeout", options_.elastic.timeout_s,
        "Elastic job: seconds the job may stay below --min-np before it fails (default 600)")
      ->type_name("S");
  value("--host-cooldown", options_.elastic.host_cooldown_s,
        "Elastic job: seconds a lost worker's host is set aside before it is tried again (default 300)")
      ->type_name("S");
  value("--reset-limit", options_.elastic.reset_limit,
        "Elastic job: the most times the world may be re-formed (default 50)")
      ->type_name("N");
  auto* ps = app_->add_flag("--ps", options_.ps.enabled,
                            "Parameter-server training: also start one `dtrain ps-server` per host");
  ps->excludes(mpi);
  value("--ps-mode", options_.ps.mode,
        "async (default): servers apply each push at once; sync: they average "
        "every worker's gradient of a step first")
      ->type_name("MODE");
  value("--ps-staleness", options_.ps.staleness,
        "async: a worker may run at most S steps ahead of the slowest (default -1: unbounded)")
      ->type_name("S");
  value("--ps-worker-timeout", options_.ps.worker_timeout_s, "Servers drop a worker silent this long (default 15)")
      ->type_name("S");
}

bool RunCommand::takes_value(const std::string& token) const {
  return std::find(value_options_.begin(), value_options_.end(), token) != value_options_.end();
}

void RunCommand::normalize_arguments(std::vector<std::string>& args) const {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& token = args[i];
    if (token == "-np" || token.starts_with("-np=")) {
      token.insert(0, "-");
      ++i;  // its value
      continue;
    }
    if (token == "--" || token.empty() || token[0] != '-') return;  // the command starts here
    if (token.find('=') == std::string::npos && takes_value(token)) ++i;
  }
}

int RunCommand::execute(const std::vector<std::string>& trailing, bool had_separator) {
  const std::vector<std::string>& leftover = app_->remaining();
  auto usage_error = [](const std::string& message) {
    std::fprintf(stderr, "dtrain run: %s\n", message.c_str());
    return 2;
  };
  if (!leftover.empty() && leftover[0].starts_with("-")) {
    return usage_error(fmt::format("unknown option '{}'", leftover[0]));
  }
  if (had_separator && !leftover.empty()) {
    return usage_error(fmt::format("unexpected argument '{}' before '--'", leftover[0]));
  }
  options_.command = had_separator ? trailing : leftover;

  if (app_->count("--np")) options_.np = np_;
  if (app_->count("--hosts")) options_.host_list = host_list_;
  if (app_->count("--hostfile")) options_.hostfile = hostfile_;
  if (app_->count("--network-interface")) options_.network_interface = iface_;
  if (app_->count("--output-filename")) options_.output_dir = output_dir_;
  if (app_->count("--rank-status-file")) options_.rank_status_file = rank_status_file_;
  if (app_->count("--timeline-filename")) options_.timeline_filename = timeline_;
  if (app_->count("--fusion-threshold-mb")) options_.fusion_threshold_mb = fusion_mb_;
  if (app_->count("--autotune-log-file")) options_.autotune_log = autotune_log_;
  if (app_->count("--cycle-time-ms")) options_.cycle_time_ms = cycle_ms_;
  if (app_->count("--stall-warning-s")) options_.stall_warning_s = stall_warning_;
  if (app_->count("--stall-shutdown-s")) options_.stall_shutdown_s = stall_shutdown_;
  if (!options_.ps.enabled &&
      (app_->count("--ps-mode") || app_->count("--ps-staleness") || app_->count("--ps-worker-timeout"))) {
    return usage_error("--ps-mode, --ps-staleness and --ps-worker-timeout need --ps");
  }
  if (app_->count("--min-np")) options_.elastic.min_np = min_np_;
  if (app_->count("--max-np")) options_.elastic.max_np = max_np_;
  if (app_->count("--host-discovery-script")) options_.elastic.discovery_script = discovery_script_;
  if (!options_.elastic.enabled() &&
      (app_->count("--elastic-timeout") || app_->count("--host-cooldown") || app_->count("--reset-limit"))) {
    return usage_error("--elastic-timeout, --host-cooldown and --reset-limit need --min-np or --max-np");
  }
  if (app_->count("--ssh-port")) options_.ssh.port = ssh_port_;
  if (app_->count("--ssh-identity-file")) options_.ssh.identity_file = identity_file_;

  auto logger = spdlog::stderr_color_st("dtrain");
  logger->set_pattern("dtrain run: [%l] %v");
  logger->set_level(options_.verbose ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_default_logger(logger);

  try {
    return launch::launch_job(options_);
  } catch (const launch::LaunchError& e) {
    std::fprintf(stderr, "dtrain run: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain run: %s\n", e.what());
    return 1;
  }
}

}  // namespace dtrain::cli
