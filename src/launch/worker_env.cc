#include "launch/worker_env.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

extern char** environ;

namespace dtrain::launch {

std::string format_env_number(double value) {
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 9e15) {
    return fmt::format("{}", static_cast<long long>(value));
  }
  return fmt::format("{}", value);
}

EnvVars dtrain_env_for(const RankPlacement& p, const WorkerEnvSettings& s) {
  EnvVars env = {
      {"DTRAIN_RANK", std::to_string(p.rank)},
      {"DTRAIN_SIZE", std::to_string(p.size)},
      {"DTRAIN_LOCAL_RANK", std::to_string(p.local_rank)},
      {"DTRAIN_LOCAL_SIZE", std::to_string(p.local_size)},
      {"DTRAIN_CROSS_RANK", std::to_string(p.cross_rank)},
      {"DTRAIN_CROSS_SIZE", std::to_string(p.cross_size)},
      {"DTRAIN_HOSTNAME", p.host},
      {"DTRAIN_RENDEZVOUS_ADDR", s.rendezvous_addr},
      {"DTRAIN_RENDEZVOUS_PORT", std::to_string(s.rendezvous_port)},
      {"DTRAIN_JOB_TOKEN", s.identity.token},
      {"DTRAIN_JOB_ID", s.identity.job_id},
  };
  if (s.network_interface) env.emplace_back("DTRAIN_IFACE", *s.network_interface);
  if (s.timeline_filename) env.emplace_back("DTRAIN_TIMELINE", *s.timeline_filename);
  if (s.timeline_mark_cycles) env.emplace_back("DTRAIN_TIMELINE_MARK_CYCLES", "1");
  if (s.autotune) env.emplace_back("DTRAIN_AUTOTUNE", "1");
  if (s.autotune_log) env.emplace_back("DTRAIN_AUTOTUNE_LOG", *s.autotune_log);
  if (s.fusion_threshold_mb) {
    double bytes = std::round(*s.fusion_threshold_mb * 1024.0 * 1024.0);
    env.emplace_back("DTRAIN_FUSION_THRESHOLD", format_env_number(bytes));
  }
  if (s.cycle_time_ms) env.emplace_back("DTRAIN_CYCLE_TIME_MS", format_env_number(*s.cycle_time_ms));
  if (s.stall_warning_s) {
    env.emplace_back("DTRAIN_STALL_WARNING_S", format_env_number(*s.stall_warning_s));
  }
  if (s.stall_shutdown_s) {
    env.emplace_back("DTRAIN_STALL_SHUTDOWN_S", format_env_number(*s.stall_shutdown_s));
  }
  if (s.verbose) env.emplace_back("DTRAIN_LOG_LEVEL", "debug");
  return env;
}

std::vector<std::string> merge_environment(const std::vector<std::string>& parent, const EnvVars& overrides) {
  std::map<std::string, std::string, std::less<>> pending(overrides.begin(), overrides.end());
  std::vector<std::string> merged;
  merged.reserve(parent.size() + overrides.size());
  for (const auto& entry : parent) {
    std::string_view key = std::string_view(entry).substr(0, entry.find('='));
    if (auto it = pending.find(key); it != pending.end()) {
      merged.push_back(it->first + "=" + it->second);
      pending.erase(it);
    } else {
      merged.push_back(entry);
    }
  }
  // Appended in the order given, not the map's order.
  for (const auto& [key, value] : overrides) {
    if (pending.count(key)) {
      merged.push_back(key + "=" + value);
      pending.erase(key);
    }
  }
  return merged;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

EnvVars dtrain_vars_of(const std::vector<std::string>& parent) {
  EnvVars vars;
  for (const auto& entry : parent) {
    size_t eq = entry.find('=');
    if (eq == std::string::npos || !entry.starts_with("DTRAIN_")) continue;
    vars.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return vars;
}

}  // namespace dtrain::launch
