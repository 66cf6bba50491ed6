#pragma once

// A loaded model behind POST /invocations. Each inference worker owns one
// Endpoint (its own copy of the model, as TorchServe's workers do), so an
// implementation need not be thread-safe.
#include <memory>

#include "serving/invocation.h"

namespace dtrain::serving {

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Decodes the request, runs the model, encodes the answer. Throws
  // InvocationError for a request it cannot serve; any other exception is the
  // server's fault (500).
  virtual InvocationResponse invoke(const InvocationRequest& request) = 0;
};

}  // namespace dtrain::serving
