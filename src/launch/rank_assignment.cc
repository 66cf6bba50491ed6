#include "launch/rank_assignment.h"

#include <fmt/format.h>

#include "launch/launch_error.h"

namespace dtrain::launch {

std::vector<RankPlacement> assign_ranks(const std::vector<HostSlots>& hosts, int np) {
  if (np < 1) throw LaunchError::usage(fmt::format("-np must be at least 1, got {}", np));
  int available = total_slots(hosts);
  if (np > available) {
    throw LaunchError::usage(fmt::format("-np {} but only {} slot{} on hosts {}", np, available,
                                         available == 1 ? "" : "s", describe_hosts(hosts)));
  }

  std::vector<RankPlacement> placements;
  placements.reserve(np);
  int cross_size = 0;
  for (int remaining = np; const auto& host : hosts) {
    if (remaining == 0) break;
    ++cross_size;
    remaining -= std::min(remaining, host.slots);
  }

  int rank = 0;
  for (int cross_rank = 0; cross_rank < cross_size; ++cross_rank) {
    const HostSlots& host = hosts[cross_rank];
    int local_size = std::min(host.slots, np - rank);
    for (int local_rank = 0; local_rank < local_size; ++local_rank, ++rank) {
      placements.push_back(RankPlacement{rank, np, local_rank, local_size, cross_rank, cross_size, host.name});
    }
  }
  return placements;
}

std::vector<std::string> hosts_used(const std::vector<RankPlacement>& placements) {
  std::vector<std::string> hosts;
  for (const auto& p : placements) {
    if (hosts.empty() || hosts.back() != p.host) hosts.push_back(p.host);
  }
  return hosts;
}

}  // namespace dtrain::launch
