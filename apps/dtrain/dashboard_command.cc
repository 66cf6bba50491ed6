#include "apps/dtrain/dashboard_command.h"

#include <signal.h>

#include <cstdio>
#include <exception>
#include <filesystem>

#include "dashboard/dashboard_server.h"

namespace dtrain::cli {

DashboardCommand::DashboardCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("dashboard",
                               "Serve the jobs under directories to a browser: curves, hosts, logs, timeline");
  app_->add_option("--jobs", jobs_, "Directories holding job directories (a spec's output_path; default ./dtrain-jobs)")
      ->type_name("DIR");
  app_->add_option("--port", port_, "Port (0: any free one)")->check(CLI::Range(0, 65535));
  app_->add_option("--bind", bind_, "Address to listen on; anything but loopback requires a token")
      ->type_name("ADDRESS");
  app_->add_option("--token", token_, "The token required off loopback (default: a random one, printed in the address)")
      ->type_name("TOKEN");
}

int DashboardCommand::execute() const {
  dashboard::DashboardOptions options;
  options.job_roots = jobs_.empty() ? std::vector<std::string>{"dtrain-jobs"} : jobs_;
  for (auto& root : options.job_roots) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) {
      std::fprintf(stderr, "dtrain dashboard: --jobs %s: no such directory\n", root.c_str());
      return 2;
    }
    root = std::filesystem::canonical(root, ec).string();
  }
  options.port = port_;
  options.bind = bind_;
  options.token = token_;
  // Taken by sigwait below, never by a handler: the server's threads inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  try {
    dashboard::DashboardServer server(options);
    server.bind();
    server.start();
    std::printf("dtrain dashboard: %s (jobs under %s)\n", server.url().c_str(), options.job_roots.front().c_str());
    std::fflush(stdout);
    int signal = 0;
    sigwait(&stop_signals, &signal);
    server.stop();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain dashboard: %s\n", e.what());
    return 1;
  }
}

}  // namespace dtrain::cli
