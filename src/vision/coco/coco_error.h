#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::vision {

// The one exception type of COCO evaluation (mask API, dataset and results
// loading, the evaluator). The message names the thing at fault: the file,
// the entry index and the field, and what was expected instead.
class CocoError : public std::runtime_error {
 public:
  explicit CocoError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dtrain::vision
