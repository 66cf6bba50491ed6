#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/job_identity.h"
#include "launch/rank_assignment.h"

namespace dtrain::launch {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Everything about the job that ends up in a worker's DTRAIN_* variables
// besides its placement. Optional knobs are exported only when the user gave
// the flag, so a DTRAIN_X already in the user's environment still applies.
struct WorkerEnvSettings {
  std::string rendezvous_addr;
  int rendezvous_port = 0;
  JobIdentity identity;

  std::optional<std::string> network_interface;  // DTRAIN_IFACE
  std::optional<std::string> timeline_filename;  // DTRAIN_TIMELINE
  bool timeline_mark_cycles = false;             // DTRAIN_TIMELINE_MARK_CYCLES=1
  bool autotune = false;                         // DTRAIN_AUTOTUNE=1
  std::optional<std::string> autotune_log;       // DTRAIN_AUTOTUNE_LOG
  std::optional<double> fusion_threshold_mb;     // DTRAIN_FUSION_THRESHOLD (bytes)
  std::optional<double> cycle_time_ms;           // DTRAIN_CYCLE_TIME_MS
  std::optional<double> stall_warning_s;         // DTRAIN_STALL_WARNING_S
  std::optional<double> stall_shutdown_s;        // DTRAIN_STALL_SHUTDOWN_S
  bool verbose = false;                          // DTRAIN_LOG_LEVEL=debug
};

// The DTRAIN_* variables one rank gets, in a fixed order.
EnvVars dtrain_env_for(const RankPlacement& placement, const WorkerEnvSettings& settings);

// `parent` ("K=V" strings, e.g. from environ) with `overrides` replacing or
// adding variables. Order of the parent is kept; new variables are appended.
std::vector<std::string> merge_environment(const std::vector<std::string>& parent, const EnvVars& overrides);

// The current process environment as "K=V" strings.
std::vector<std::string> current_environment();

// The DTRAIN_* variables of `parent`, so they can be forwarded to remote hosts.
EnvVars dtrain_vars_of(const std::vector<std::string>& parent);

// Formats a number for an environment variable: integers without a decimal
// point ("5", not "5.0"), other values in their shortest exact form.
std::string format_env_number(double value);

}  // namespace dtrain::launch
