#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// `dtrain ps-server --index I [--mode async|sync] [--staleness S] [--worker-timeout S]
// [--ready-rank R]`: one parameter server of a `dtrain run --ps` job (the launcher
// starts it; see src/ps/ps_server_process.h). Serves until SIGTERM.
class PsServerCommand {
 public:
  explicit PsServerCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }
  int execute() const;

 private:
  CLI::App* app_;
  int index_ = 0;
  std::string mode_ = "async";
  int staleness_ = -1;
  double worker_timeout_s_ = 15;
  int ready_rank_ = -1;
};

}  // namespace dtrain::cli
