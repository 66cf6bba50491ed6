#include "runtime/stall_inspector.h"

#include <sstream>

#include "runtime/logging.h"

namespace dtrain::runtime {
namespace {

std::string ranks_string(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  out << ']';
  return out.str();
}

double seconds_between(StallInspector::Clock::time_point a, StallInspector::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

std::string describe_stall(const StallInspector::Pending& p, StallInspector::Clock::time_point now) {
  std::ostringstream out;
  out << p.operation << " '" << p.name << "' waiting " << static_cast<long long>(seconds_between(p.first_seen, now))
      << " s: submitted by ranks " << ranks_string(p.submitted_ranks) << ", missing on ranks "
      << ranks_string(p.missing_ranks);
  return out.str();
}

bool StallInspector::due(Clock::time_point oldest, Clock::time_point now) const {
  const double waited = seconds_between(oldest, now);
  return (warning_seconds_ > 0 && waited >= warning_seconds_) || (shutdown_seconds_ > 0 && waited >= shutdown_seconds_);
}

std::string StallInspector::check(const std::vector<Pending>& pending, Clock::time_point now) {
  if (warning_seconds_ <= 0 && shutdown_seconds_ <= 0) return {};
  std::vector<const Pending*> stalled;
  const Pending* beyond_shutdown = nullptr;
  for (const Pending& p : pending) {
    const double waited = seconds_between(p.first_seen, now);
    if (warning_seconds_ > 0 && waited >= warning_seconds_) stalled.push_back(&p);
    if (shutdown_seconds_ > 0 && waited >= shutdown_seconds_ && !beyond_shutdown) beyond_shutdown = &p;
  }
  if (!stalled.empty() && seconds_between(last_warning_time_, now) >= warning_seconds_) {
    std::ostringstream out;
    out << "stall: ranks have not all submitted these tensors (a rank may be stuck, or the ranks run different "
           "code paths): ";
    for (std::size_t i = 0; i < stalled.size() && i < 10; ++i)
      out << (i ? "; " : "") << describe_stall(*stalled[i], now);
    if (stalled.size() > 10) out << "; and " << stalled.size() - 10 << " more";
    last_warning_ = out.str();
    last_warning_time_ = now;
    log().warn("{}", last_warning_);
  }
  if (beyond_shutdown) {
    return "dtrain: shutting down after a stall of more than " +
           std::to_string(static_cast<long long>(shutdown_seconds_)) +
           " s (DTRAIN_STALL_SHUTDOWN_S): " + describe_stall(*beyond_shutdown, now);
  }
  return {};
}

}  // namespace dtrain::runtime
