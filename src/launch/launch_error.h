#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::launch {

// The one exception type of the launch layer. The message names the thing at
// fault (the flag, the hostfile line, the host, the rank). The kind tells the
// CLI which exit code to use: 2 for bad input, 1 for failures at run time.
class LaunchError : public std::runtime_error {
 public:
  enum class Kind { kUsage, kRuntime };

  LaunchError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  static LaunchError usage(const std::string& message) { return LaunchError(Kind::kUsage, message); }
  static LaunchError runtime(const std::string& message) { return LaunchError(Kind::kRuntime, message); }

  Kind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return kind_ == Kind::kUsage ? 2 : 1; }

 private:
  Kind kind_;
};

}  // namespace dtrain::launch
