#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/container_layout.h"
#include "job/job_spec.h"

namespace dtrain::job {

// The regular files under a channel's source, as paths relative to it
// ("a/b.bin"), sorted: the keys ShardedByKey distributes.
std::vector<std::string> list_channel_files(const std::string& source);

// The keys host `host_index` of `host_count` gets under ShardedByKey:
// contiguous runs of the sorted keys, sizes differing by at most one, the
// first hosts taking the remainder (hosts beyond the key count get none).
// The shards are disjoint and their union is `sorted_keys`.
std::vector<std::string> shard_for_host(const std::vector<std::string>& sorted_keys, int host_index, int host_count);

// What staging one channel on one host did.
struct ChannelStaging {
  std::string channel;
  std::string host;
  std::string method;  // "copy", "shard", "shared", "pipe"
  uint64_t files = 0;
  uint64_t bytes = 0;
  double seconds = 0;

  nlohmann::ordered_json to_json() const;
  std::string describe() const;  // one log line
};

// Makes a File-mode channel available on one host as input/data/<channel>:
// FullyReplicated copies every file, ShardedByKey copies the host's shard,
// shared symlinks the source itself. Pipe-mode channels are not staged
// here (see PipeFeeder); this returns their file list size only.
// Throws JobError naming the channel and host.
ChannelStaging stage_channel(const ChannelSpec& channel, const ContainerLayout& layout, const std::string& host,
                             int host_index, int host_count);

// The absolute paths of the files host `host_index` streams in Pipe mode.
std::vector<std::string> pipe_files_for_host(const ChannelSpec& channel, int host_index, int host_count);

}  // namespace dtrain::job
