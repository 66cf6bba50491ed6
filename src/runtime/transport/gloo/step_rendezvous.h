// The rendezvous of a Slurm job step started by a bare srun, where no launcher serves the
// job's store: rank 0 serves it on the step's first node for the rest of the process's
// life, and the other ranks wait until it answers before they meet through it.
#pragma once

#include "runtime/environment.h"

namespace dtrain::runtime {

// Rank 0 of a step without launcher (config.rendezvous_in_step): starts the store on 0.0.0.0:rendezvous_port unless it
// already runs (a second init() in the same process). Others: waits until the store at
// rendezvous_addr:rendezvous_port answers, up to config.timeout. Throws dtrain::Error.
void meet_at_step_rendezvous(const RuntimeConfig& config);

}  // namespace dtrain::runtime
