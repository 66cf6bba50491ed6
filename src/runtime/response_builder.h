// Turns the requests every rank sent for one name into the coordinator's decision: a
// response that tells each rank what to run, or an error that names the disagreement.
#pragma once

#include <vector>

#include "runtime/message.h"

namespace dtrain::runtime {

// `requests[r]` is rank r's request, or nullptr for a rank that has joined (and so sent none).
// At least one is non-null. `joined_ranks` is sorted. `rank_names[r]`: the rank an error calls
// rank r (a process set's member by its job rank); empty: r itself.
Response build_response(const std::vector<const Request*>& requests, const std::vector<int>& joined_ranks,
                        const std::vector<int>& rank_names = {});

// Rows of the first dimension that rank `rank` keeps after a reducescatter of `rows` rows.
std::int64_t reducescatter_rows(std::int64_t rows, int world_size, int rank);

}  // namespace dtrain::runtime
