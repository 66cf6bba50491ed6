#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// `dtrain serve ...`: serving needs LibTorch, which the dtrain CLI never
// links (it must build and start fast), so the subcommand replaces this
// process with dtrain-serve from the same directory, arguments unchanged.
class ServeCommand {
 public:
  explicit ServeCommand(CLI::App& parent);  // listed in `dtrain --help`

  // The dtrain-serve next to the running dtrain binary.
  static std::string server_path();
  // Execs server_path() with `arguments` (those after "serve"); returns only
  // on failure, with the exit status after printing a one-line error.
  static int execute(const std::vector<std::string>& arguments);
};

}  // namespace dtrain::cli
