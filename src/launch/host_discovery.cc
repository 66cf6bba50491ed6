#include "launch/host_discovery.h"

#include <sys/wait.h>

#include <cstdio>
#include <sstream>

#include <fmt/format.h>

#include "launch/launch_error.h"

namespace dtrain::launch {

std::vector<HostSlots> parse_discovered_hosts(const std::string& output, const std::string& origin) {
  std::vector<HostSlots> hosts;
  std::istringstream lines(output);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    line = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    try {
      for (auto& host : parse_host_list(line)) hosts.push_back(std::move(host));
    } catch (const LaunchError& e) {
      throw LaunchError::runtime(fmt::format("{} line {}: {}", origin, number, e.what()));
    }
  }
  return hosts;
}

std::vector<HostSlots> discover_hosts(const std::string& script) {
  const std::string origin = fmt::format("--host-discovery-script {}", script);
  FILE* pipe = ::popen(script.c_str(), "r");
  if (!pipe) throw LaunchError::runtime(fmt::format("{}: cannot run it", origin));
  std::string output;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw LaunchError::runtime(
        fmt::format("{}: it failed (exit status {})", origin, WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  }
  return parse_discovered_hosts(output, origin);
}

}  // namespace dtrain::launch
