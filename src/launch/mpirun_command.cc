#include "launch/mpirun_command.h"

#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/launch_error.h"

namespace dtrain::launch {

std::vector<std::string> mpirun_argv(const MpirunSettings& s) {
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(s.np)};
  std::string hosts;
  for (const auto& h : s.hosts) hosts += (hosts.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  argv.insert(argv.end(), {"-H", hosts, "--map-by", "slot", "--tag-output"});
  if (s.running_as_root) argv.push_back("--allow-run-as-root");
  // With more ranks than cores, idle ranks must yield rather than spin in MPI's progress loop.
  if (s.oversubscribed) argv.insert(argv.end(), {"--mca", "mpi_yield_when_idle", "1"});
  if (s.network_interface) {
    argv.insert(argv.end(), {"--mca", "btl_tcp_if_include", *s.network_interface, "--mca", "oob_tcp_if_include",
                             *s.network_interface});
  }
  if (!s.agent.empty()) {
    for (const auto& word : s.agent) {
      if (word.empty() || word.find_first_of(" \t\n") != std::string::npos) {
        throw LaunchError::usage(fmt::format(
            "launch agent word '{}' is empty or holds whitespace; Open MPI's plm_rsh_agent splits on spaces", word));
      }
    }
    argv.insert(argv.end(), {"--mca", "plm_rsh_agent", fmt::format("{}", fmt::join(s.agent, " "))});
  }
  std::set<std::string> forwarded;
  for (const auto& [name, value] : s.knobs) forwarded.insert(name);
  forwarded.insert(s.forwarded_names.begin(), s.forwarded_names.end());
  for (const auto& name : forwarded) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), s.extra_args.begin(), s.extra_args.end());
  argv.insert(argv.end(), s.command.begin(), s.command.end());
  return argv;
}

EnvVars shared_knobs(const EnvVars& rank_env) {
  static const std::set<std::string> per_rank = {
      "DTRAIN_RANK",       "DTRAIN_SIZE",     "DTRAIN_LOCAL_RANK",      "DTRAIN_LOCAL_SIZE",      "DTRAIN_CROSS_RANK",
      "DTRAIN_CROSS_SIZE", "DTRAIN_HOSTNAME", "DTRAIN_RENDEZVOUS_ADDR", "DTRAIN_RENDEZVOUS_PORT", "DTRAIN_JOB_TOKEN",
      "DTRAIN_JOB_ID"};
  EnvVars knobs;
  for (const auto& [name, value] : rank_env) {
    if (!per_rank.contains(name)) knobs.emplace_back(name, value);
  }
  return knobs;
}

std::vector<std::string> split_arguments(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

}  // namespace dtrain::launch
