#include "launch/mpirun_output.h"

#include <sys/wait.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "launch/output_relay.h"
#include "launch/signal_channel.h"

namespace dtrain::launch {
namespace {

// "[1,3]<stdout>:" -- mpirun's --tag-output: job id, rank, stream.
const std::regex kRankTag(R"(^\[[0-9]+,([0-9]+)\]<([a-z]+)>:)");
const std::regex kKilledRank(
    R"(mpirun noticed that process rank ([0-9]+) with PID [0-9]+ on node (\S+) exited on signal ([0-9]+))");
const std::regex kProcessName(R"(Process name:\s*\[\[[0-9]+,[0-9]+\],([0-9]+)\])");
const std::regex kExitCode(R"(Exit code:\s*([0-9]+))");

constexpr size_t kMessageLimit = 400;

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

void append_limited(std::string& message, std::string_view text) {
  if (message.size() >= kMessageLimit) return;
  if (!message.empty()) message += ' ';
  message += std::string(text.substr(0, kMessageLimit - std::min(message.size(), kMessageLimit)));
}

bool is_rule(std::string_view s) { return s.size() >= 10 && s.find_first_not_of('-') == std::string_view::npos; }

std::string mpirun_ending(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("mpirun was killed by signal {} ({})", WTERMSIG(status), signal_name(WTERMSIG(status)));
  }
  return fmt::format("mpirun exited with status {}", WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace

MpirunOutput::MpirunOutput(std::vector<RankPlacement> placements, bool tag_with_host)
    : placements_(std::move(placements)), tag_with_host_(tag_with_host) {}

std::string MpirunOutput::relay(std::string_view line) {
  std::match_results<std::string_view::const_iterator> tag;
  if (std::regex_search(line.begin(), line.end(), tag, kRankTag)) {
    int rank = std::stoi(tag[1].str());
    std::string stream = tag[2].str();
    std::string prefix = tag_with_host_ ? relay_prefix(rank, host_of(rank), stream) : relay_prefix(rank, stream);
    return prefix + std::string(line.substr(static_cast<size_t>(tag.length(0))));
  }
  read_mpirun_line(trimmed(line));
  return std::string(line);
}

void MpirunOutput::read_mpirun_line(std::string_view text) {
  std::match_results<std::string_view::const_iterator> m;
  if (!failed_rank_ && std::regex_search(text.begin(), text.end(), m, kKilledRank)) {
    failed_rank_ = std::stoi(m[1].str());
    failed_host_ = m[2].str();
    failed_signal_ = std::stoi(m[3].str());
  } else if (!failed_rank_ && std::regex_search(text.begin(), text.end(), m, kProcessName)) {
    failed_rank_ = std::stoi(m[1].str());
    expecting_exit_code_ = true;
  } else if (expecting_exit_code_ && std::regex_search(text.begin(), text.end(), m, kExitCode)) {
    failed_exit_code_ = std::stoi(m[1].str());
    expecting_exit_code_ = false;
  }

  if (is_rule(text)) {
    inside_box_ = !inside_box_;
    if (!inside_box_ && !box_message_.empty()) box_done_ = true;
    return;
  }
  if (text.empty()) return;
  if (inside_box_ && !box_done_) {
    append_limited(box_message_, text);
  } else if (!inside_box_ && loose_message_.empty()) {
    append_limited(loose_message_, text);
  }
}

std::string MpirunOutput::host_of(int rank) const {
  if (rank >= 0 && rank < static_cast<int>(placements_.size())) return placements_[rank].host;
  return "?";
}

std::optional<RankPlacement> MpirunOutput::failed_rank() const {
  if (!failed_rank_) return std::nullopt;
  RankPlacement p;
  if (*failed_rank_ < static_cast<int>(placements_.size())) p = placements_[*failed_rank_];
  p.rank = *failed_rank_;
  if (failed_host_) p.host = *failed_host_;
  return p;
}

std::string MpirunOutput::describe_failure(int mpirun_wait_status) const {
  std::string mpirun = mpirun_ending(mpirun_wait_status);
  if (failed_rank_) {
    std::string who = fmt::format("rank {} (host {})", *failed_rank_, failed_host_.value_or(host_of(*failed_rank_)));
    if (failed_signal_) {
      return fmt::format("{} was killed by signal {} ({}); {}", who, *failed_signal_, signal_name(*failed_signal_),
                         mpirun);
    }
    if (failed_exit_code_) {
      bool same = WIFEXITED(mpirun_wait_status) && WEXITSTATUS(mpirun_wait_status) == *failed_exit_code_;
      return fmt::format("{} exited with status {}{}", who, *failed_exit_code_, same ? "" : "; " + mpirun);
    }
    return fmt::format("{} failed; {}", who, mpirun);
  }
  const std::string& message = box_message_.empty() ? loose_message_ : box_message_;
  if (!message.empty()) return fmt::format("{}: {}", mpirun, message);
  return mpirun;
}

}  // namespace dtrain::launch
