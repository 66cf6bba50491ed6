#include "serving/endpoint.h"

namespace dtrain::serving {

std::vector<InvocationOutcome> Endpoint::invoke_batch(const std::vector<InvocationRequest>& requests) {
  std::vector<InvocationOutcome> outcomes(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    try {
      outcomes[i].response = invoke(requests[i]);
    } catch (...) {
      outcomes[i].error = std::current_exception();
    }
  }
  return outcomes;
}

}  // namespace dtrain::serving
