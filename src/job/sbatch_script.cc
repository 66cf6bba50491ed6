#include "job/sbatch_script.h"

#include <cmath>

#include <fmt/format.h>

#include "job/job_error.h"

namespace dtrain::job {

void check_runs_on_slurm(const JobSpec& spec) {
  for (const auto& channel : spec.channels) {
    if (channel.input_mode == InputMode::kPipe) {
      throw JobError::usage(fmt::format(
          "channel '{}': Pipe input mode is not supported on Slurm (its FIFOs are fed from the submitting host); "
          "use input_mode: File",
          channel.name));
    }
  }
  if (spec.engine != Engine::kGloo) {
    throw JobError::usage(
        fmt::format("distribution engine '{}' is not supported on Slurm yet; use gloo", to_string(spec.engine)));
  }
  if (spec.elastic) {
    throw JobError::usage(
        "elastic: not supported on Slurm yet (the ranks start as one srun step, which ends with any of its "
        "tasks); drop the elastic section or run the job with --backend local");
  }
}

std::string slurm_time_limit(double seconds) {
  const long minutes = std::max(1L, static_cast<long>(std::ceil(seconds / 60.0)));
  return fmt::format("{}-{:02}:{:02}:00", minutes / 1440, (minutes / 60) % 24, minutes % 60);
}

std::string shell_quote(const std::string& word) {
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string render_sbatch_script(const JobSpec& spec, const SbatchOptions& options) {
  check_runs_on_slurm(spec);
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", spec.name);
  s += fmt::format("#SBATCH --nodes={}\n", spec.instance_count);
  s += fmt::format("#SBATCH --ntasks-per-node={}\n", spec.processes_per_host);
  s += fmt::format("#SBATCH --time={}\n", slurm_time_limit(spec.max_run_seconds));
  if (!options.log_file.empty()) s += fmt::format("#SBATCH --output={}\n", options.log_file);
  if (!options.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", options.partition);
  s += fmt::format(
      "#\n"
      "# dtrain job {}: {} host(s) x {} process(es). Every node runs dtrain's entry point for its\n"
      "# host: algo-N is the allocation's N-th node, its /opt/ml is <hosts-dir>/algo-N (staged by\n"
      "# `dtrain job run --backend slurm`), and algo-1, the master, starts the ranks with srun.\n",
      spec.name, spec.instance_count, spec.processes_per_host);
  s += "set -u\n";
  s += fmt::format("export TRAINING_JOB_NAME={}\n", shell_quote(spec.name));
  for (const auto& [name, value] : spec.environment) s += fmt::format("export {}={}\n", name, shell_quote(value));
  s += fmt::format("exec srun --nodes={0} --ntasks={0} --ntasks-per-node=1 --label --kill-on-bad-exit=0 \\\n",
                   spec.instance_count);
  s += fmt::format("  {} job slurm-host --hosts-dir {}", shell_quote(options.dtrain_exe),
                   shell_quote(options.hosts_dir));
  s += " --";
  for (const auto& word : spec.command) s += " " + shell_quote(word);
  s += "\n";
  return s;
}

}  // namespace dtrain::job
