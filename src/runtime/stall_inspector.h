// Watches the coordinator's pending table for tensors that some ranks submitted and others
// have not: after the warning time it logs which ranks are missing which tensors (again every
// warning period); past the shutdown time, if set, it asks for the job to stop with an error.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace dtrain::runtime {

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  struct Pending {
    std::string name;
    const char* operation;
    std::vector<int> submitted_ranks;
    std::vector<int> missing_ranks;
    Clock::time_point first_seen;
  };

  StallInspector(double warning_seconds, double shutdown_seconds)
      : warning_seconds_(warning_seconds), shutdown_seconds_(shutdown_seconds) {}

  // Whether anything that has waited since `oldest` is old enough to report: lets the caller
  // skip describing its pending tensors on the (almost every) cycle when nothing is.
  bool due(Clock::time_point oldest, Clock::time_point now) const;

  // Returns a non-empty reason when the job must shut down. Warnings go to the log.
  std::string check(const std::vector<Pending>& pending, Clock::time_point now);

  const std::string& last_warning() const { return last_warning_; }

 private:
  double warning_seconds_;
  double shutdown_seconds_;
  Clock::time_point last_warning_time_{};
  std::string last_warning_;
};

std::string describe_stall(const StallInspector::Pending& p, StallInspector::Clock::time_point now);

}  // namespace dtrain::runtime
