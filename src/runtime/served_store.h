// The rendezvous store a rank serves itself when no launcher does (rank 0 of a bare srun's
// step, rank 0 of a world PyTorch numbered): one per process, kept until the process exits, so
// that slower ranks may still read keys after rank 0's own init() returned and a later init()
// of the same world meets there again.
#pragma once

#include <string>

namespace dtrain::runtime {

// Starts the store for `size` ranks on 0.0.0.0:`port` (0: an ephemeral port) unless this
// process serves one already; returns its port. Throws dtrain::Error when binding fails, or
// when the store served is for another number of ranks or on another fixed port.
int serve_store(const std::string& token, int size, int port);

}  // namespace dtrain::runtime
