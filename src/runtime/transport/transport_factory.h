// Chooses and connects the engines for a process: MPI when mpirun started it, Gloo under
// `dtrain run`, nothing for a world of one; then, for allreduce, the shared-memory path among
// each host's ranks and the hierarchical path across hosts when they apply (each step that
// does not apply is logged with its reason, never an error).
#pragma once

#include <memory>

#include "runtime/environment.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

// Collective over all ranks. Updates `config`'s local and cross ranks and sizes from the
// host layout it discovers. `generation` counts this process's init() calls.
std::unique_ptr<Transport> connect_transport(RuntimeConfig& config, int generation);

}  // namespace dtrain::runtime
