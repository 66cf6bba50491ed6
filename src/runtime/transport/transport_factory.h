// Chooses and connects the engines for a process: MPI when mpirun started it, Gloo under
// `dtrain run`, nothing for a world of one; then, for allreduce, the shared-memory path among
// each host's ranks and the hierarchical path across hosts when they apply (each step that
// does not apply is logged with its reason, never an error).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/environment.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

// Collective over all ranks. Updates `config`'s local and cross ranks and sizes from the
// host layout it discovers. `generation` counts this process's init() calls.
std::unique_ptr<Transport> connect_transport(RuntimeConfig& config, int generation);

// A process set's engines: collective over its `members` (job ranks, ascending) alone, which
// connect as a world of their own (`config`'s rank and size are the set's, its process_set the
// set's name for messages) under `key`, the same on every member and unique in this init(). The same choice as the
// job's: MPI under mpirun, else Gloo and the TCP mesh, shared memory among members on one host.
std::unique_ptr<Transport> connect_process_set_transport(RuntimeConfig& config, int generation, const std::string& key,
                                                         const std::vector<int>& members);

}  // namespace dtrain::runtime
