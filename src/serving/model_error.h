#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::serving {

// A model that cannot be served: a damaged or unsafe archive, missing or
// inconsistent metadata, weights that do not load. The message is one line
// naming the file at fault; `dtrain serve` prints it and exits 1.
class ModelError : public std::runtime_error {
 public:
  explicit ModelError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dtrain::serving
