#include "launch/flight_record_collector.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "flight_record/hang_verdict.h"

namespace dtrain::launch {

bool FlightRecordCollector::take(std::string_view line) {
  if (!line.starts_with(flight_record::kLinePrefix)) return false;
  try {
    records_.push_back(flight_record::parse_rank_record(line.substr(flight_record::kLinePrefix.size())));
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

bool FlightRecordCollector::has_every_rank(int world_size) const {
  std::set<int> ranks;
  for (const auto& r : records_) ranks.insert(r.rank);
  for (int rank = 0; rank < world_size; ++rank) {
    if (!ranks.contains(rank)) return false;
  }
  return true;
}

int FlightRecordCollector::world_size() const {
  int size = 0;
  for (const auto& r : records_) size = std::max(size, r.size);
  return size;
}

std::string FlightRecordCollector::verdict(int world_size) const {
  return flight_record::hang_verdict(records_, world_size);
}

}  // namespace dtrain::launch
