#include "runtime/transport/host_layout.h"

#include <unistd.h>

#include <map>

#include "runtime/transport/shm/shared_segment.h"
#include "runtime/wire.h"

namespace dtrain::runtime {

HostLayout discover_host_layout(Transport& global, const std::string& hostname, const std::string& job_tag) {
  WireWriter mine;
  mine.put_string(hostname);
  mine.put<std::int64_t>(getpid());
  const auto gathered = global.gather_to_coordinator(mine.take());

  std::vector<char> table;
  if (global.rank() == 0) {
    // Hosts in order of their lowest rank; local ranks in rank order.
    std::map<std::string, int> host_of_name;
    std::vector<int> host(gathered.size()), local(gathered.size()), sizes;
    std::vector<std::int64_t> creator_pid;
    for (std::size_t r = 0; r < gathered.size(); ++r) {
      WireReader reader(gathered[r]);
      const std::string name = reader.get_string();
      const auto pid = reader.get<std::int64_t>();
      auto [it, inserted] = host_of_name.emplace(name, static_cast<int>(sizes.size()));
      if (inserted) {
        sizes.push_back(0);
        creator_pid.push_back(pid);
      }
      host[r] = it->second;
      local[r] = sizes[it->second]++;
    }
    WireWriter out;
    out.put_vector(host);
    out.put_vector(local);
    out.put_vector(sizes);
    out.put_vector(creator_pid);
    table = out.take();
  }
  table = global.broadcast_from_coordinator(table);

  WireReader reader(table);
  const auto host = reader.get_vector<int>();
  const auto local = reader.get_vector<int>();
  HostLayout layout;
  layout.local_sizes = reader.get_vector<int>();
  const auto creator_pid = reader.get_vector<std::int64_t>();
  const int me = global.rank();
  layout.host_index = host[me];
  layout.host_count = static_cast<int>(layout.local_sizes.size());
  layout.local_rank = local[me];
  layout.local_size = layout.local_sizes[layout.host_index];
  // The creator's pid leads the name, so a later job can tell a stale segment by it.
  layout.segment_name = std::string(SharedSegment::kNamePrefix) + std::to_string(creator_pid[layout.host_index]) + "-" +
                        job_tag + "-host" + std::to_string(layout.host_index);
  return layout;
}

}  // namespace dtrain::runtime
