#include "runtime/fusion_planner.h"

#include <numeric>

namespace dtrain::runtime {
namespace {

bool fusible(const Response& r) { return r.ok() && r.type == OpType::kAllreduce; }

bool same_kind(const Response& a, const Response& b) {
  return a.dtype == b.dtype && a.device == b.device && a.reduce_op == b.reduce_op && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.joined_ranks == b.joined_ranks;
}

std::size_t bytes_of(const Response& r) {
  return static_cast<std::size_t>(std::accumulate(r.sizes.begin(), r.sizes.end(), std::int64_t{0})) *
         element_size(r.dtype);
}

void append(Response& into, const Response& from) {
  into.names.insert(into.names.end(), from.names.begin(), from.names.end());
  into.sizes.insert(into.sizes.end(), from.sizes.begin(), from.sizes.end());
}

}  // namespace

std::vector<Response> fuse_responses(std::vector<Response> responses, std::size_t threshold_bytes) {
  if (responses.size() < 2) return responses;  // the usual case of a blocking call: nothing to fuse
  // First merge each group into one unit (the coordinator emits a group's members together).
  std::vector<Response> units;
  for (auto& r : responses) {
    if (fusible(r) && !r.group.empty() && !units.empty() && fusible(units.back()) && units.back().group == r.group) {
      append(units.back(), r);
    } else {
      units.push_back(std::move(r));
    }
  }
  // Then greedily fill buffers: each unit joins the earliest open buffer of its kind with room.
  std::vector<Response> fused;
  std::vector<bool> taken(units.size(), false);
  for (std::size_t i = 0; i < units.size(); ++i) {
    if (taken[i]) continue;
    taken[i] = true;
    Response current = std::move(units[i]);
    if (fusible(current)) {
      std::size_t bytes = bytes_of(current);
      for (std::size_t j = i + 1; j < units.size() && bytes < threshold_bytes; ++j) {
        if (taken[j] || !fusible(units[j]) || !same_kind(current, units[j])) continue;
        const std::size_t more = bytes_of(units[j]);
        if (bytes + more > threshold_bytes) continue;
        append(current, units[j]);
        bytes += more;
        taken[j] = true;
      }
    }
    fused.push_back(std::move(current));
  }
  return fused;
}

}  // namespace dtrain::runtime
