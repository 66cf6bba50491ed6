#pragma once

#include <stdexcept>
#include <string>

namespace dtrain::job {

// The one exception type of the job layer. The message names the thing at
// fault (the spec field, the host, the channel, the file). The kind tells the
// CLI which exit code to use: 2 for a bad spec or usage, 1 for failures at
// run time.
class JobError : public std::runtime_error {
 public:
  enum class Kind { kUsage, kRuntime };

  JobError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}

  static JobError usage(const std::string& message) { return JobError(Kind::kUsage, message); }
  static JobError runtime(const std::string& message) { return JobError(Kind::kRuntime, message); }

  Kind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return kind_ == Kind::kUsage ? 2 : 1; }

 private:
  Kind kind_;
};

}  // namespace dtrain::job
