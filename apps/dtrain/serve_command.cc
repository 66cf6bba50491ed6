#include "apps/dtrain/serve_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace dtrain::cli {

ServeCommand::ServeCommand(CLI::App& parent) {
  parent
      .add_subcommand("serve",
                      "Serve a trained model over HTTP with SageMaker's inference contract "
                      "(runs dtrain-serve; `dtrain serve --help` for its options)")
      ->allow_extras();
}

std::string ServeCommand::server_path() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (error ? std::filesystem::path("dtrain-serve") : self.parent_path() / "dtrain-serve").string();
}

int ServeCommand::execute(const std::vector<std::string>& arguments) {
  const std::string program = server_path();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const std::string& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  ::execv(program.c_str(), argv.data());
  std::fprintf(stderr, "dtrain serve: cannot run %s: %s (dtrain-serve is installed next to dtrain)\n", program.c_str(),
               std::strerror(errno));
  return 1;
}

}  // namespace dtrain::cli
