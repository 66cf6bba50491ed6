#include "apps/dtrain/ps_server_command.h"

#include <cstdio>
#include <exception>

#include "ps/ps_server_process.h"

namespace dtrain::cli {

PsServerCommand::PsServerCommand(CLI::App& parent) {
  app_ =
      parent.add_subcommand("ps-server", "One parameter server of a `dtrain run --ps` job (started by the launcher)");
  app_->add_option("--index", index_, "This server's index among the job's servers")
      ->required()
      ->check(CLI::NonNegativeNumber);
  app_->add_option("--mode", mode_, "async: apply each push at once; sync: average a step's pushes first")
      ->check(CLI::IsMember({"async", "sync"}));
  app_->add_option("--staleness", staleness_, "async: how many steps a worker may run ahead of the slowest (-1: any)")
      ->check(CLI::Range(-1, 1 << 30));
  app_->add_option("--worker-timeout", worker_timeout_s_, "Drop a worker silent this many seconds")
      ->check(CLI::PositiveNumber);
  app_->add_option("--ready-rank", ready_rank_, "The rank to report ready as to the launcher");
}

int PsServerCommand::execute() const {
  ps::ServerProcessOptions options;
  options.store.server = index_;
  options.store.mode = mode_ == "sync" ? ps::UpdateMode::kSync : ps::UpdateMode::kAsync;
  options.store.staleness = staleness_;
  options.store.worker_timeout_s = worker_timeout_s_;
  options.ready_rank = ready_rank_;
  try {
    return ps::run_server_process(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain ps-server %d: %s\n", index_, e.what());
    return 1;
  }
}

}  // namespace dtrain::cli
