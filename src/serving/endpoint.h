#pragma once

// A loaded model behind POST /invocations. Each inference worker owns one
// Endpoint (its own copy of the model, as TorchServe's workers do), so an
// implementation need not be thread-safe.
#include <exception>
#include <memory>
#include <vector>

#include "serving/invocation.h"

namespace dtrain::serving {

// One request's answer within a batch: its response, or (error set) the
// exception that invoke() would have thrown for it.
struct InvocationOutcome {
  InvocationResponse response;
  std::exception_ptr error;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Decodes the request, runs the model, encodes the answer. Throws
  // InvocationError for a request it cannot serve; any other exception is the
  // server's fault (500).
  virtual InvocationResponse invoke(const InvocationRequest& request) = 0;

  // Answers several requests at once, one outcome per request in order, each
  // request's error its own. This default runs invoke() on each in turn; a
  // model that computes faster on a batch (one forward pass for several
  // images) overrides it. An exception thrown out of it fails every request
  // of the batch.
  virtual std::vector<InvocationOutcome> invoke_batch(const std::vector<InvocationRequest>& requests);
};

}  // namespace dtrain::serving
