// What ranks tell the coordinator (Request) and what it tells them back (Response), plus
// the per-cycle envelopes around them. Their fields are listed once, in message_fields.h;
// a field added here goes there too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/dtrain.h"

namespace dtrain::runtime {

enum class OpType : std::uint8_t { kAllreduce, kAllgather, kBroadcast, kAlltoall, kReducescatter, kBarrier, kJoin };
const char* to_string(OpType type);
// "ALLREDUCE": how timelines name the activity, as Horovod's do.
std::string activity_name(OpType type);

// Names the runtime itself uses for barrier and join; user names may not start with "__dtrain".
inline constexpr const char* kBarrierName = "__dtrain_barrier";
inline constexpr const char* kJoinName = "__dtrain_join";

// One rank's description of one submitted tensor operation.
struct Request {
  std::int32_t rank = 0;
  OpType type = OpType::kAllreduce;
  std::string name;
  DataType dtype = DataType::kFloat32;
  DeviceType device = DeviceType::kCPU;  // the kind only: ranks may use different GPUs
  std::vector<std::int64_t> shape;
  ReduceOp reduce_op = ReduceOp::kSum;
  std::int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  std::vector<std::int64_t> splits;  // alltoall: rows sent to each rank
  std::string group;                 // grouped allreduce: the group's name, else empty
  std::int32_t group_size = 0;

  // Equal in everything but the submitting rank.
  bool same_parameters(const Request& other) const;
};

// The coordinator's decision about one tensor, or (after fusion) several allreduces.
struct Response {
  OpType type = OpType::kAllreduce;
  std::vector<std::string> names;
  std::string error;  // non-empty: the operation failed on every rank with this message
  DataType dtype = DataType::kFloat32;
  DeviceType device = DeviceType::kCPU;
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  std::int32_t root = 0;
  std::vector<std::int64_t> shape;  // single tensor: rank 0's shape (first dims of others in sizes)
  std::string group;
  std::int32_t group_size = 0;
  std::int32_t world_size = 0;
  // Allreduce: element count of each named tensor (joined ranks contribute that many zeros).
  // Allgather: first dimension of each rank. Alltoall: the size×size splits matrix, row = sender.
  std::vector<std::int64_t> sizes;
  std::vector<std::int32_t> joined_ranks;  // ranks that had joined when this was decided
  std::int32_t last_joined = -1;           // join: the rank whose join completed the set

  bool ok() const { return error.empty(); }
};

// What every rank sends the coordinator each cycle.
struct CycleReport {
  bool shutdown = false;
  std::vector<std::uint64_t> cache_bits;  // bit p: a newly submitted request equals cache entry p
  std::vector<Request> requests;          // newly submitted requests not found in the cache
};

// What the coordinator sends back: the operations to run now, in order, each either a cache
// position or a full response.
struct CyclePlan {
  struct Item {
    std::int32_t cache_position = -1;  // >= 0: the cached response at this position
    Response response;                 // otherwise this
  };
  bool shutdown = false;
  std::string shutdown_reason;  // non-empty when the job is being stopped because of an error
  std::vector<Item> items;
  // Rank 0's settings, which every rank applies: fusing these items, and the next cycle's
  // batching window (so ranks with different DTRAIN_* values, or an autotuner on rank 0,
  // still fuse alike).
  std::uint64_t fusion_threshold_bytes = 0;
  double cycle_time_ms = 0;
};

std::vector<char> encode(const CycleReport& report);
CycleReport decode_report(const std::vector<char>& bytes);
std::vector<char> encode(const CyclePlan& plan);
CyclePlan decode_plan(const std::vector<char>& bytes);

// Every field as name=value, for logs and test failures: "rank=1 type=allreduce name=\"w\" ...".
std::string describe(const Request& request);
std::string describe(const Response& response);

// "[2, 3]" for error messages.
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace dtrain::runtime
