#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::vision::config {

// The one exception type of the config layer. The message is one line that
// names the key at fault and, when the value came from a file, the file and
// line: "unknown config key 'MODEL.RPN.NMS_THRESHOLD' in configs/x.yaml:12
// (did you mean MODEL.RPN.NMS_THRESH?)". A CLI prints it as it is.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dtrain::vision::config
