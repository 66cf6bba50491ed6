#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// `dtrain entrypoint [--base-dir DIR] [-- command args...]`: the training
// container's entry point (SageMaker's contract: /opt/ml, SM_* variables,
// hyperparameters as arguments, output/success|failure). A leading "train"
// argument, as SageMaker passes it, is accepted and ignored.
// `dtrain entrypoint --as-rank -- command...`: how the master starts each
// rank on its host.
class EntrypointCommand {
 public:
  explicit EntrypointCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }
  int execute(const std::vector<std::string>& trailing) const;

 private:
  CLI::App* app_;
  std::string base_dir_;
  bool as_rank_ = false;
  bool verbose_ = false;
  std::vector<std::string> positional_;
};

}  // namespace dtrain::cli
