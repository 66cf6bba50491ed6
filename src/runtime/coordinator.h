// Rank 0's half of negotiation. Each cycle it takes every rank's report, records who has
// submitted what, and plans the operations that every (non-joined) rank has submitted, in
// the order they first arrived. Pure logic over messages: no I/O, so tests drive it directly.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/message.h"
#include "runtime/response_cache.h"
#include "runtime/stall_inspector.h"
#include "runtime/timeline.h"

namespace dtrain::runtime {

class Coordinator {
 public:
  using Clock = std::chrono::steady_clock;

  // `cache` is rank 0's own cache (read only here: ranks update caches when they run a plan).
  // `rank_names[r]`: the rank that errors and stall reports call rank r (a process set's
  // member by its job rank); empty: r itself.
  Coordinator(int world_size, const ResponseCache& cache, StallInspector stall_inspector, Timeline* timeline,
              std::vector<int> rank_names = {});

  // `reports[r]` is rank r's report for this cycle.
  CyclePlan plan(const std::vector<CycleReport>& reports, Clock::time_point now);

  std::size_t pending_count() const { return table_.size(); }
  // Holds nothing from earlier cycles: its next plan depends on that cycle's reports alone.
  bool idle() const { return table_.empty() && joined_.empty(); }
  void set_timeline(Timeline* timeline) { timeline_ = timeline; }  // nullptr: none

 private:
  struct Pending {
    std::uint64_t arrival = 0;
    std::vector<std::optional<Request>> requests;  // index = rank
    std::optional<std::uint32_t> cache_position;   // set while every submission came through this bit
    bool all_through_cache = true;
    Clock::time_point first_seen;
  };

  // The phases of plan(), in order.
  // Records every rank's submissions and joins; returns the rank that joined last this cycle, or -1.
  int record(const std::vector<CycleReport>& reports, Clock::time_point now, CyclePlan& plan);
  void plan_ready(CyclePlan& plan);                           // every name all non-joined ranks submitted
  void plan_join(int last_joined, CyclePlan& plan);           // once every rank has joined
  void check_stalls(Clock::time_point now, CyclePlan& plan);  // the stall inspector, on what is left

  void add(Request request, std::optional<std::uint32_t> cache_position, Clock::time_point now);
  bool ready(const Pending& pending) const;

  int name_of(int rank) const { return rank_names_.empty() ? rank : rank_names_[rank]; }

  int world_size_;
  std::vector<int> rank_names_;
  const ResponseCache& cache_;
  StallInspector stall_inspector_;
  Timeline* timeline_;
  using Table = std::unordered_map<std::string, Pending>;
  Table table_;
  std::uint64_t next_arrival_ = 0;
  std::set<int> joined_;
};

}  // namespace dtrain::runtime
