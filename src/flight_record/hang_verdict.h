// The launcher's verdict on a hang, from the flight records of the ranks (rules without I/O):
// which collectives are awaited, by which ranks and for how long, which ranks never submitted
// them, which ranks are outside dtrain altogether, and where to look first.
#pragma once

#include <string>
#include <vector>

#include "flight_record/flight_record.h"

namespace dtrain::flight_record {

// One paragraph. `records`: those the ranks wrote (any order; a rank's latest counts) of a
// world of `world_size` ranks; ranks without one are named as such. Empty when `records` is.
std::string hang_verdict(const std::vector<RankRecord>& records, int world_size);

// "0", "0, 1", "2-5, 7": ranks in ascending order, runs of three or more shortened.
std::string describe_ranks(std::vector<int> ranks);

}  // namespace dtrain::flight_record
