// The runtime's configuration for a world numbered outside dtrain (dtrain::ExternalWorld):
// PyTorch's init_process_group gives the rank, the size and the timeout, and rank 0's
// rendezvous store replaces the launcher's.
#pragma once

#include "dtrain/dtrain.h"
#include "runtime/environment.h"

namespace dtrain::runtime {

// `config` (read from the environment, for its knobs) with the world of `world`. Throws
// dtrain::Error naming the field that is out of range.
void adopt_external_world(RuntimeConfig& config, const ExternalWorld& world, bool stall_shutdown_from_environment);

}  // namespace dtrain::runtime
