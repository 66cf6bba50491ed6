#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::ps {

// Everything the parameter-server layer throws: a bad plan, an unreachable or
// refusing server, a worker the server dropped. The message names the server,
// the piece or the worker at fault.
class PsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dtrain::ps
