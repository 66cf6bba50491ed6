// The ranks' flight records as `dtrain run` receives them: each rank writes its record as one
// stderr line (flight_record::kLinePrefix + JSON) on a stall, an error or SIGUSR1; the
// supervisor hands every stderr line here first, and those taken are kept, not printed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "flight_record/flight_record.h"

namespace dtrain::launch {

class FlightRecordCollector {
 public:
  // Keeps `line` (without its relay prefix and newline) if it is a rank's flight record;
  // false for any other line, and for a damaged record (which is then printed as it came).
  bool take(std::string_view line);

  bool empty() const { return records_.empty(); }
  // The largest world a record names; 0 without records.
  int world_size() const;
  // Whether every rank of 0..world_size-1 has sent one since the last clear().
  bool has_every_rank(int world_size) const;
  void clear() { records_.clear(); }

  // flight_record::hang_verdict of what was received; empty when nothing was.
  std::string verdict(int world_size) const;

 private:
  std::vector<flight_record::RankRecord> records_;
};

}  // namespace dtrain::launch
