#include "apps/dtrain/entrypoint_command.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

#include "job/entrypoint.h"
#include "settings/env_setting.h"

namespace dtrain::cli {

EntrypointCommand::EntrypointCommand(CLI::App& parent) {
  app_ =
      parent.add_subcommand("entrypoint", "Training container entry point (SageMaker's contract); every host runs it");
  app_->add_option("--base-dir", base_dir_, "The container's /opt/ml (default: SAGEMAKER_BASE_DIR or /opt/ml)")
      ->type_name("DIR");
  app_->add_flag("--as-rank", as_rank_, "Export SM_* and run the command with the hyperparameters (one rank)");
  app_->add_flag("--verbose", verbose_, "Log what the entry point does");
  app_->add_option("args", positional_, "\"train\" (ignored), or the algorithm without \"--\"");
  app_->footer(
      "Environment: SAGEMAKER_BASE_DIR, SAGEMAKER_PROGRAM, DTRAIN_LAUNCH_AGENT (how the master\n"
      "starts ranks on hosts; default ssh), DTRAIN_HOST_PORT (29417), DTRAIN_HOST_WAIT_S (300).\n");
}

int EntrypointCommand::execute(const std::vector<std::string>& trailing) const {
  std::vector<std::string> command = trailing;
  if (command.empty()) {
    command = positional_;
    if (!command.empty() && command.front() == "train") command.erase(command.begin());
  }
  job::EntrypointOptions options;
  try {
    options = job::entrypoint_options_from_environment();
  } catch (const settings::SettingError& e) {
    std::fprintf(stderr, "dtrain entrypoint: %s\n", e.what());
    return 2;
  }
  if (!base_dir_.empty()) options.base_dir = base_dir_;
  if (as_rank_) return job::exec_as_rank(options.base_dir, command);

  auto logger = spdlog::stderr_color_st("dtrain-entrypoint");
  logger->set_pattern("dtrain entrypoint: [%l] %v");
  logger->set_level(verbose_ ? spdlog::level::debug : spdlog::level::warn);
  spdlog::set_default_logger(logger);
  options.command = command;
  return job::run_entrypoint(options);
}

}  // namespace dtrain::cli
