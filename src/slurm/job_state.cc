#include "slurm/job_state.h"

#include <cstdlib>
#include <set>

#include <fmt/format.h>

namespace dtrain::slurm {
namespace {

// The value of " Key=value" in a one-line record; values hold no spaces except at the end
// of the record (Command=, WorkDir=, which come after the keys read here).
std::string field(std::string_view line, std::string_view key) {
  const std::string needle = std::string(key) + "=";
  size_t at = 0;
  while ((at = line.find(needle, at)) != std::string_view::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      const size_t start = at + needle.size();
      const size_t end = line.find(' ', start);
      return std::string(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    }
    at += needle.size();
  }
  return "";
}

}  // namespace

bool JobState::ended() const {
  static const std::set<std::string> still_going = {
      "PENDING",     "CONFIGURING", "RUNNING",   "COMPLETING", "SUSPENDED", "REQUEUED",     "REQUEUE_HOLD",
      "REQUEUE_FED", "RESIZING",    "SIGNALING", "STAGE_OUT",  "STOPPED",   "RESV_DEL_HOLD"};
  return !still_going.contains(state);
}

JobState parse_job_state(std::string_view scontrol_line) {
  JobState job;
  job.state = field(scontrol_line, "JobState");
  if (job.state.empty()) {
    throw SlurmError(fmt::format("no JobState= in scontrol's answer '{}'", scontrol_line.substr(0, 200)));
  }
  job.reason = field(scontrol_line, "Reason");
  const std::string exit = field(scontrol_line, "ExitCode");
  if (const size_t colon = exit.find(':'); colon != std::string::npos) {
    job.exit_code = std::atoi(exit.substr(0, colon).c_str());
    job.exit_signal = std::atoi(exit.substr(colon + 1).c_str());
  }
  return job;
}

}  // namespace dtrain::slurm
