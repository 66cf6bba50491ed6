#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::maskrcnn {

// A problem with what the user asked for rather than with the work itself:
// an --input that does not exist, a directory without images, outputs that
// would overwrite inputs. The command turns it into exit status 2, as CLI11's
// own parse errors, so scripts can tell "fix the command" from "it failed".
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace dtrain::maskrcnn
