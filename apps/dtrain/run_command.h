#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "launch/launch_options.h"

namespace dtrain::cli {

// `dtrain run [options] -- command args...`: the launcher subcommand.
class RunCommand {
 public:
  explicit RunCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }

  // Rewrites the mpirun-style "-np N" (CLI11 only knows single-letter short
  // options) to "--np N" in the run subcommand's own options, leaving the
  // user's command untouched.
  void normalize_arguments(std::vector<std::string>& args) const;

  // Runs the launcher after parsing. `trailing` is what followed "--" on the
  // command line (empty when there was none). Returns the exit code; turns
  // LaunchError into a one-line message.
  int execute(const std::vector<std::string>& trailing, bool had_separator);

 private:
  bool takes_value(const std::string& token) const;

  CLI::App* app_;
  launch::LaunchOptions options_;
  std::vector<std::string> value_options_;  // names of options that take a value
  // Raw values for optionals that CLI11 cannot fill directly.
  int np_ = 0;
  int min_np_ = 0;
  int max_np_ = 0;
  std::string discovery_script_;
  std::string host_list_, hostfile_, iface_, output_dir_, rank_status_file_, timeline_, identity_file_;
  double fusion_mb_ = 0, cycle_ms_ = 0, stall_warning_ = 0, stall_shutdown_ = 0;
  int ssh_port_ = 0;
  std::string autotune_log_;
  bool use_gloo_ = false;  // --gloo: the default engine, accepted for symmetry with --mpi
};

}  // namespace dtrain::cli
