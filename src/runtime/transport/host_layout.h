// Which ranks share a host, found at init() by gathering every rank's host name over the
// global transport, so it holds however the job was launched (dtrain run or mpirun).
#pragma once

#include <string>
#include <vector>

#include "runtime/transport/transport.h"

namespace dtrain::runtime {

struct HostLayout {
  int host_index = 0;  // this rank's host, numbered in order of each host's lowest rank
  int host_count = 1;
  int local_rank = 0;
  int local_size = 1;
  std::vector<int> local_sizes;  // per host
  std::string segment_name;      // this host's shared-memory segment (its creator: local rank 0)

  bool uniform() const {
    for (int n : local_sizes) {
      if (n != local_sizes.front()) return false;
    }
    return true;
  }
};

// Collective over `global`. `hostname` identifies this rank's host; `job_tag` makes segment
// names unique per job and per init().
HostLayout discover_host_layout(Transport& global, const std::string& hostname, const std::string& job_tag);

}  // namespace dtrain::runtime
