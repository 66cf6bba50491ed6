#pragma once

#include <string>
#include <vector>

#include "launch/host_spec.h"

namespace dtrain::launch {

// Where one rank runs and its coordinates in the job. cross_rank is the index
// of the rank's host among the hosts used; cross_size is how many hosts are used.
struct RankPlacement {
  int rank = 0;
  int size = 0;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;
  int cross_size = 0;
  std::string host;

  bool operator==(const RankPlacement&) const = default;
};

// Fills hosts in order (the first host gets ranks 0..slots-1, and so on),
// using only as many hosts as `np` needs. Throws LaunchError (usage) when
// np < 1 or np exceeds the slots available.
std::vector<RankPlacement> assign_ranks(const std::vector<HostSlots>& hosts, int np);

// The distinct hosts of a placement, in cross_rank order.
std::vector<std::string> hosts_used(const std::vector<RankPlacement>& placements);

}  // namespace dtrain::launch
