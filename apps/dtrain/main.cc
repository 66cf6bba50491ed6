// dtrain: the command-line front door. Each subcommand lives in its own
// file and registers itself on the app; this file only dispatches.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/dtrain/coco_eval_command.h"
#include "apps/dtrain/dashboard_command.h"
#include "apps/dtrain/data_command.h"
#include "apps/dtrain/entrypoint_command.h"
#include "apps/dtrain/flight_record_command.h"
#include "apps/dtrain/job_command.h"
#include "apps/dtrain/ps_server_command.h"
#include "apps/dtrain/run_command.h"
#include "apps/dtrain/serve_command.h"

int main(int argc, char** argv) {
  CLI::App app{"dtrain: distributed data-parallel training", "dtrain"};
  app.require_subcommand(1);
  dtrain::cli::RunCommand run(app);
  dtrain::cli::CocoEvalCommand coco_eval(app);
  dtrain::cli::DataCommand data(app);
  dtrain::cli::JobCommand job(app);
  dtrain::cli::EntrypointCommand entrypoint(app);
  dtrain::cli::ServeCommand serve(app);
  dtrain::cli::PsServerCommand ps_server(app);
  dtrain::cli::DashboardCommand dashboard(app);
  dtrain::cli::FlightRecordCommand flight_record(app);

  // Everything after "serve" belongs to dtrain-serve, "--" and --help included.
  if (argc > 1 && std::string(argv[1]) == "serve") {
    return dtrain::cli::ServeCommand::execute(std::vector<std::string>(argv + 2, argv + argc));
  }

  // Split at the first "--": what follows is a user command, never options.
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> trailing;
  bool had_separator = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      trailing.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      args.resize(i);
      had_separator = true;
      break;
    }
  }
  if (!args.empty() && args[0] == "run") {
    std::vector<std::string> rest(args.begin() + 1, args.end());
    run.normalize_arguments(rest);
    std::copy(rest.begin(), rest.end(), args.begin() + 1);
  }

  std::string context = !args.empty() && args[0] == "run" ? "dtrain run" : "dtrain";
  if (!args.empty() && args[0] == "coco-eval") context = "dtrain coco-eval";
  if (!args.empty() && args[0] == "data") context = "dtrain data";
  if (!args.empty() && args[0] == "job") context = "dtrain job";
  if (!args.empty() && args[0] == "entrypoint") context = "dtrain entrypoint";
  if (!args.empty() && args[0] == "ps-server") context = "dtrain ps-server";
  if (!args.empty() && args[0] == "dashboard") context = "dtrain dashboard";
  if (!args.empty() && args[0] == "flight-record") context = "dtrain flight-record";
  try {
    // CLI11 wants the arguments in reverse order.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\n", context.c_str(), e.what());
    return 2;
  }

  if (run.subcommand()->parsed()) return run.execute(trailing, had_separator);
  if (coco_eval.subcommand()->parsed()) return coco_eval.execute();
  if (data.subcommand()->parsed()) return data.execute();
  if (job.subcommand()->parsed()) return job.execute(trailing);
  if (entrypoint.subcommand()->parsed()) return entrypoint.execute(trailing);
  if (ps_server.subcommand()->parsed()) return ps_server.execute();
  if (dashboard.subcommand()->parsed()) return dashboard.execute();
  if (flight_record.subcommand()->parsed()) return flight_record.execute();
  return 2;
}
