// dtrain::Error, the one exception type the runtime and its rendezvous client raise.
#pragma once

#include <stdexcept>

namespace dtrain {

// Raised for every runtime failure: misuse, a mismatch between ranks, a lost peer, a stall.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dtrain
