// Packs ready allreduces of the same kind (dtype, op, scale factors, joined ranks) into
// fused responses of at most `threshold` bytes, so many small gradients cross the network
// as one buffer. Deterministic: every rank fuses the same plan the same way. A grouped
// allreduce is never split, and a tensor larger than the threshold runs alone.
#pragma once

#include <cstddef>
#include <vector>

#include "runtime/message.h"

namespace dtrain::runtime {

std::vector<Response> fuse_responses(std::vector<Response> responses, std::size_t threshold_bytes);

}  // namespace dtrain::runtime
