#include "launch/srun_output.h"

#include <signal.h>
#include <sys/wait.h>

#include <cstring>
#include <regex>

#include <fmt/format.h>

#include "launch/output_relay.h"
#include "launch/signal_channel.h"

namespace dtrain::launch {
namespace {

// "  3: text" -- srun --label: the task id, right-aligned to the widest id.
const std::regex kTaskLabel(R"(^ *([0-9]+): )");
// "srun: error: node2: task 3: Killed", "srun: error: node1: tasks 0-1: Exited with exit code 2"
const std::regex kTaskReport(R"(^srun: error: (\S+): tasks? ([0-9]+)(?:[-,][0-9,-]*)?: (.*)$)");
const std::regex kExitedWith(R"(^Exited with exit code ([0-9]+))");

constexpr size_t kMessageLimit = 400;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  return s;
}

// srun's words for a task's death by signal (strsignal's), back to the number.
std::optional<int> signal_of(const std::string& words) {
  for (int sig : {SIGKILL, SIGTERM, SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGINT, SIGHUP, SIGPIPE, SIGQUIT}) {
    if (words.starts_with(strsignal(sig))) return sig;
  }
  return std::nullopt;
}

}  // namespace

SrunOutput::SrunOutput(std::vector<RankPlacement> placements, bool tag_with_host)
    : placements_(std::move(placements)), tag_with_host_(tag_with_host) {}

std::string SrunOutput::relay(std::string_view line, bool is_stderr) {
  std::match_results<std::string_view::const_iterator> label;
  if (std::regex_search(line.begin(), line.end(), label, kTaskLabel)) {
    const int rank = std::stoi(label[1].str());
    const char* stream = is_stderr ? "stderr" : "stdout";
    const bool known = rank < static_cast<int>(placements_.size());
    const std::string host = known ? placements_[static_cast<size_t>(rank)].host : "?";
    const std::string prefix = tag_with_host_ ? relay_prefix(rank, host, stream) : relay_prefix(rank, stream);
    return prefix + std::string(line.substr(static_cast<size_t>(label.length(0))));
  }
  read_srun_line(trimmed(line));
  return std::string(line);
}

void SrunOutput::read_srun_line(std::string_view text) {
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(text.begin(), text.end(), m, kTaskReport)) {
    if (failed_rank_) return;  // later reports are the step's other tasks being stopped
    failed_host_ = m[1].str();
    failed_rank_ = std::stoi(m[2].str());
    const std::string what = m[3].str();
    std::smatch exited;
    if (std::regex_search(what, exited, kExitedWith)) {
      failed_exit_code_ = std::stoi(exited[1].str());
    } else {
      failed_signal_ = signal_of(what);
    }
    return;
  }
  if (first_error_.empty() && text.starts_with("srun: error: ")) {
    first_error_ = std::string(text.substr(0, kMessageLimit));
  }
}

std::optional<RankPlacement> SrunOutput::failed_rank() const {
  if (!failed_rank_) return std::nullopt;
  RankPlacement p;
  if (*failed_rank_ < static_cast<int>(placements_.size())) p = placements_[static_cast<size_t>(*failed_rank_)];
  p.rank = *failed_rank_;
  p.host = failed_host_;
  return p;
}

std::optional<int> SrunOutput::failed_wait_status() const {
  if (failed_exit_code_) return (*failed_exit_code_ & 0xff) << 8;
  if (failed_signal_) return *failed_signal_;
  return std::nullopt;
}

std::string SrunOutput::describe_failure(int srun_wait_status) const {
  const std::string srun =
      WIFSIGNALED(srun_wait_status)
          ? fmt::format("srun was killed by signal {} ({})", WTERMSIG(srun_wait_status),
                        signal_name(WTERMSIG(srun_wait_status)))
          : fmt::format("srun exited with status {}", WIFEXITED(srun_wait_status) ? WEXITSTATUS(srun_wait_status) : 1);
  if (failed_rank_) {
    const std::string who = fmt::format("rank {} (host {})", *failed_rank_, failed_host_);
    if (failed_exit_code_) return fmt::format("{} exited with status {}; {}", who, *failed_exit_code_, srun);
    if (failed_signal_) {
      return fmt::format("{} was killed by signal {} ({}); {}", who, *failed_signal_, signal_name(*failed_signal_),
                         srun);
    }
    return fmt::format("{} failed; {}", who, srun);
  }
  if (!first_error_.empty()) return fmt::format("{}: {}", srun, first_error_);
  return srun;
}

}  // namespace dtrain::launch
