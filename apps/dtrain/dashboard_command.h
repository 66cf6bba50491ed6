#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// `dtrain dashboard [--jobs DIR ...] [--port 8090] [--bind 127.0.0.1] [--token T]`: serves
// the jobs under the directories to a browser until SIGINT or SIGTERM (docs/dashboard.md).
class DashboardCommand {
 public:
  explicit DashboardCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }
  int execute() const;

 private:
  CLI::App* app_;
  std::vector<std::string> jobs_;
  int port_ = 8090;
  std::string bind_ = "127.0.0.1";
  std::string token_;
};

}  // namespace dtrain::cli
