#include "runtime/coordinator.h"

#include <algorithm>
#include <map>

#include "runtime/response_builder.h"

namespace dtrain::runtime {

Coordinator::Coordinator(int world_size, const ResponseCache& cache, StallInspector stall_inspector, Timeline* timeline,
                         std::vector<int> rank_names)
    : world_size_(world_size),
      rank_names_(std::move(rank_names)),
      cache_(cache),
      stall_inspector_(std::move(stall_inspector)),
      timeline_(timeline) {}

void Coordinator::add(Request request, std::optional<std::uint32_t> cache_position, Clock::time_point now) {
  auto [it, inserted] = table_.try_emplace(request.name);
  Pending& pending = it->second;
  if (inserted) {
    pending.arrival = next_arrival_++;
    pending.requests.resize(world_size_);
    pending.first_seen = now;
    pending.cache_position = cache_position;
    if (timeline_) timeline_->begin(request.name, "NEGOTIATE_" + activity_name(request.type));
  }
  const int rank = request.rank;
  if (pending.requests[rank]) return;  // a rank reports each submission once; ignore repeats
  if (!cache_position || pending.cache_position != cache_position) pending.all_through_cache = false;
  if (timeline_) timeline_->instant(request.name, "rank " + std::to_string(rank) + " ready");
  pending.requests[rank] = std::move(request);
}

bool Coordinator::ready(const Pending& pending) const {
  bool any = false;
  for (int r = 0; r < world_size_; ++r) {
    if (pending.requests[r]) {
      any = true;
    } else if (!joined_.contains(r)) {
      return false;
    }
  }
  return any;
}

CyclePlan Coordinator::plan(const std::vector<CycleReport>& reports, Clock::time_point now) {
  CyclePlan plan;
  const int last_joined = record(reports, now, plan);
  plan_ready(plan);
  plan_join(last_joined, plan);
  check_stalls(now, plan);
  return plan;
}

int Coordinator::record(const std::vector<CycleReport>& reports, Clock::time_point now, CyclePlan& plan) {
  int last_joined = -1;
  for (int r = 0; r < world_size_; ++r) {
    const CycleReport& report = reports[r];
    plan.shutdown = plan.shutdown || report.shutdown;
    for (std::uint32_t position : set_positions(report.cache_bits)) {
      add(request_for_rank(cache_.response_at(position), r), position, now);
    }
    for (const Request& request : report.requests) {
      if (request.rank != r)
        throw Error("dtrain: control message from rank " + std::to_string(r) + " claims rank " +
                    std::to_string(request.rank));
      if (request.type == OpType::kJoin) {
        joined_.insert(r);
        last_joined = r;  // ranks are visited in order, so ties go to the highest rank
      } else {
        add(request, std::nullopt, now);
      }
    }
  }
  return last_joined;
}

void Coordinator::plan_ready(CyclePlan& plan) {
  // Everything every non-joined rank has submitted, in order of first arrival. (Iterators into
  // the table, not copies of names: this runs every cycle, and erasing one entry leaves the
  // others' iterators valid.)
  std::vector<std::pair<std::uint64_t, Table::iterator>> by_arrival;
  std::map<std::string, int> ready_in_group;
  for (auto it = table_.begin(); it != table_.end(); ++it) {
    if (!ready(it->second)) continue;
    by_arrival.emplace_back(it->second.arrival, it);
    for (const auto& request : it->second.requests) {
      if (request && !request->group.empty()) {
        ++ready_in_group[request->group];
        break;
      }
    }
  }
  std::sort(by_arrival.begin(), by_arrival.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  const std::vector<int> joined(joined_.begin(), joined_.end());
  for (const auto& [arrival, it] : by_arrival) {
    Pending& pending = it->second;
    const Request* any = nullptr;
    std::vector<const Request*> requests(world_size_, nullptr);
    for (int r = 0; r < world_size_; ++r) {
      if (pending.requests[r]) {
        requests[r] = &*pending.requests[r];
        any = requests[r];
      }
    }
    // A grouped allreduce waits until its whole group is ready, so the group runs as one unit.
    if (!any->group.empty() && ready_in_group[any->group] < any->group_size) continue;

    CyclePlan::Item item;
    if (pending.all_through_cache && pending.cache_position && joined.empty()) {
      item.cache_position = static_cast<std::int32_t>(*pending.cache_position);
    } else {
      item.response = build_response(requests, joined, rank_names_);
    }
    if (timeline_) timeline_->end(it->first);
    plan.items.push_back(std::move(item));
    table_.erase(it);
  }
}

void Coordinator::plan_join(int last_joined, CyclePlan& plan) {
  if (static_cast<int>(joined_.size()) != world_size_) return;
  CyclePlan::Item item;
  item.response.type = OpType::kJoin;
  item.response.names = {kJoinName};
  item.response.world_size = world_size_;
  item.response.last_joined = last_joined >= 0 ? last_joined : *joined_.rbegin();
  plan.items.push_back(std::move(item));
  joined_.clear();
}

void Coordinator::check_stalls(Clock::time_point now, CyclePlan& plan) {
  // Describing every pending tensor for the stall inspector costs allocations; do it only on
  // the rare cycle when the oldest one has waited long enough to be reported.
  Clock::time_point oldest = now;
  for (const auto& [name, pending] : table_) oldest = std::min(oldest, pending.first_seen);
  if (table_.empty() || !stall_inspector_.due(oldest, now)) return;
  std::vector<StallInspector::Pending> waiting;
  for (const auto& [name, pending] : table_) {
    StallInspector::Pending p;
    p.name = name;
    p.first_seen = pending.first_seen;
    for (int r = 0; r < world_size_; ++r) {
      if (pending.requests[r]) {
        p.submitted_ranks.push_back(name_of(r));
        p.operation = to_string(pending.requests[r]->type);
      } else if (!joined_.contains(r)) {
        p.missing_ranks.push_back(name_of(r));
      }
    }
    waiting.push_back(std::move(p));
  }
  std::sort(waiting.begin(), waiting.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  if (std::string reason = stall_inspector_.check(waiting, now); !reason.empty()) {
    plan.shutdown = true;
    plan.shutdown_reason = reason;
  }
}

}  // namespace dtrain::runtime
