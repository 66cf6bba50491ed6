// dtrain::Error, the one exception type the runtime and its rendezvous client raise, and
// WorkersLostError, the one kind of it a training loop may recover from.
#pragma once

#include <stdexcept>

namespace dtrain {

// Raised for every runtime failure: misuse, a mismatch between ranks, a lost peer, a stall.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A peer stopped answering: it exited, was killed, stalled past DTRAIN_TIMEOUT_S, or its host
// became unreachable. Every pending and later operation of this world fails with it, on every
// survivor. An elastic job (dtrain::elastic::run, `dtrain run --min-np`) recovers by forming a
// new world; any other program ends, as with any Error.
class WorkersLostError : public Error {
 public:
  using Error::Error;
};

}  // namespace dtrain
