#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// `dtrain flight-record PATH... [--world-size N]`: the hang verdict from flight records the
// ranks wrote (docs/debugging.md), for jobs whose records `dtrain run` did not read itself
// (under mpirun or srun, or ranks on other hosts asked with `kill -USR1`). A PATH is a
// DTRAIN_FLIGHT_RECORDER_DIR (its rank*.json), one such file, or a log holding the ranks'
// stderr lines ("dtrain flight record: {...}", after any prefix the launcher added).
class FlightRecordCommand {
 public:
  explicit FlightRecordCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }
  int execute() const;

 private:
  CLI::App* app_;
  std::vector<std::string> paths_;
  int world_size_ = 0;
};

}  // namespace dtrain::cli
