// What a rank's flight recorder holds (PyTorch's flight recorder, NCCL's RAS): its last
// collectives with their timestamps and states, and the one-line JSON form in which a rank
// hands it to the launcher (stderr) or writes it to a file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::flight_record {

// Where a collective had got to on this rank.
enum class CollectiveState {
  kSubmitted,  // handed to the runtime, waiting for the other ranks (negotiation)
  kStarted,    // every rank submitted it: its data is moving
  kFinished,
  kFailed,
};

struct CollectiveRecord {
  std::uint64_t sequence = 0;  // the rank's count of submissions, from 0
  std::string name;
  std::string operation;  // "allreduce", "broadcast", ...
  std::vector<std::int64_t> shape;
  std::string dtype;
  std::string device;                  // "cpu" or "cuda"
  std::string process_set = "global";  // the ranks it runs over
  CollectiveState state = CollectiveState::kSubmitted;
  // Wall-clock microseconds since the epoch (comparable across the ranks of a host, and
  // across hosts as far as their clocks agree); 0 for a phase not reached.
  std::int64_t submitted_us = 0;
  std::int64_t started_us = 0;
  std::int64_t finished_us = 0;
};

struct RankRecord {
  int rank = 0;
  int size = 0;
  std::string host;
  std::int64_t pid = 0;
  std::string reason;  // why it was written: the stall's or the error's message, "SIGUSR1"
  std::int64_t written_us = 0;
  std::vector<CollectiveRecord> collectives;  // oldest first
};

// The largest world a record may name (what the verdict enumerates is bounded by it).
inline constexpr int kMostRanks = 1 << 24;

// The prefix of the line a rank writes to stderr; the launcher takes such lines for itself.
inline constexpr std::string_view kLinePrefix = "dtrain flight record: ";

const char* to_string(CollectiveState state);

// Submitted or started: not yet finished or failed.
bool in_flight(const CollectiveRecord& collective);

// One line of JSON, no newline.
std::string to_json(const RankRecord& record);

// Throws std::invalid_argument naming the field that is missing or of the wrong kind, or a
// rank outside a world of 1 to kMostRanks.
RankRecord parse_rank_record(std::string_view json);

}  // namespace dtrain::flight_record
