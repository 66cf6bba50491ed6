#include "flight_record/hang_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>

namespace dtrain::flight_record {
namespace {

// Awaited names listed one by one before the rest are counted.
constexpr std::size_t kNamesListed = 3;

// In double: the times come from other processes' records and may be anything.
double seconds_between(std::int64_t from_us, std::int64_t to_us) {
  return (static_cast<double>(to_us) - static_cast<double>(from_us)) / 1e6;
}

std::string ranks_word(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + describe_ranks(ranks);
}

// One awaited collective across the ranks.
struct Awaited {
  std::string name;
  std::string operation;
  std::vector<int> waiting;  // ranks with it in flight
  std::vector<int> absent;   // ranks with a record but without it in flight
  bool started = false;      // on some rank its data was moving
  double longest_s = 0;      // the longest a rank had waited when it wrote its record
  std::int64_t first_submitted_us = INT64_MAX;
};

std::vector<Awaited> awaited_collectives(const std::map<int, RankRecord>& by_rank) {
  std::map<std::string, Awaited> by_name;
  for (const auto& [rank, record] : by_rank) {
    for (const CollectiveRecord& c : record.collectives) {
      if (!in_flight(c)) continue;
      Awaited& a = by_name[c.name];
      a.name = c.name;
      a.operation = c.operation;
      if (a.waiting.empty() || a.waiting.back() != rank) a.waiting.push_back(rank);
      a.started = a.started || c.state == CollectiveState::kStarted;
      a.longest_s = std::max(a.longest_s, seconds_between(c.submitted_us, record.written_us));
      a.first_submitted_us = std::min(a.first_submitted_us, c.submitted_us);
    }
  }
  std::vector<Awaited> result;
  for (auto& [name, a] : by_name) {
    // Started somewhere means submitted everywhere: a rank without it in flight has finished it.
    for (const auto& [rank, record] : by_rank) {
      if (!a.started && !std::binary_search(a.waiting.begin(), a.waiting.end(), rank)) a.absent.push_back(rank);
    }
    result.push_back(std::move(a));
  }
  std::sort(result.begin(), result.end(),
            [](const Awaited& x, const Awaited& y) { return x.first_submitted_us < y.first_submitted_us; });
  return result;
}

std::string describe_awaited(const Awaited& a) {
  const std::string what = fmt::format("{} '{}'", a.operation, a.name);
  if (a.absent.empty()) {
    return fmt::format(
        "{} was submitted by every rank that wrote a record and {}; it is stuck between them "
        "(a slow or broken link), not waiting for a rank",
        what, a.started ? "its data was moving" : "had not started");
  }
  return fmt::format("{} is awaited by {} (for up to {:.1f} s) and was never submitted by {}", what,
                     ranks_word(a.waiting), a.longest_s, ranks_word(a.absent));
}

// The newest finished collective of a rank, if any.
const CollectiveRecord* last_finished(const RankRecord& record) {
  const CollectiveRecord* last = nullptr;
  for (const CollectiveRecord& c : record.collectives) {
    if (c.state == CollectiveState::kFinished && (!last || c.finished_us >= last->finished_us)) last = &c;
  }
  return last;
}

std::string describe_idle(const RankRecord& record) {
  if (const CollectiveRecord* last = last_finished(record)) {
    return fmt::format(
        "rank {} has nothing in flight: its last collective, {} '{}', finished {:.1f} s before it "
        "wrote its record, and since then it has been in its own code (or blocked outside dtrain)",
        record.rank, last->operation, last->name, seconds_between(last->finished_us, record.written_us));
  }
  return fmt::format(
      "rank {} has nothing in flight and finished no collective it still remembers: it is in its own "
      "code (or blocked outside dtrain)",
      record.rank);
}

// Two ranks each waiting on a collective the other never submitted: from the records alone a
// skipped collective and two called in different orders look the same.
struct Crossed {
  int first_rank, second_rank;
  std::string first_name, second_name;
};

std::optional<Crossed> crossed_pair(const std::vector<Awaited>& awaited) {
  for (const Awaited& a : awaited) {
    for (const Awaited& b : awaited) {
      if (&a == &b) continue;
      for (int r1 : a.waiting) {
        if (!std::binary_search(b.absent.begin(), b.absent.end(), r1)) continue;
        for (int r2 : b.waiting) {
          if (!std::binary_search(a.absent.begin(), a.absent.end(), r2)) continue;
          if (r1 < r2) return Crossed{r1, r2, a.name, b.name};
          return Crossed{r2, r1, b.name, a.name};
        }
      }
    }
  }
  return std::nullopt;
}

std::string describe_crossed(const Crossed& c, const std::map<int, RankRecord>& by_rank) {
  // Where they parted: the newest collective both finished, when it is the same one.
  std::string after;
  const CollectiveRecord* first = last_finished(by_rank.at(c.first_rank));
  const CollectiveRecord* second = last_finished(by_rank.at(c.second_rank));
  if (first && second && first->name == second->name)
    after = fmt::format(" after {} '{}'", first->operation, first->name);
  return fmt::format(
      "ranks {} and {} wait on each other{}: rank {} called '{}' where rank {} called '{}' (one of them "
      "skipped a collective, or they call them in different orders)",
      c.first_rank, c.second_rank, after, c.first_rank, c.first_name, c.second_rank, c.second_name);
}

// The reason's head: "dtrain: shutting down after a stall of more than 5 s (...): allreduce ..."
// becomes "shutting down after a stall of more than 5 s (...)"; the rest is what the verdict says.
std::string reason_head(std::string_view reason) {
  constexpr std::string_view kOrigin = "dtrain: ";
  if (reason.starts_with(kOrigin)) reason.remove_prefix(kOrigin.size());
  return std::string(reason.substr(0, reason.find(": ")));
}

std::string capitalised(std::string sentence) {
  if (!sentence.empty() && sentence[0] >= 'a' && sentence[0] <= 'z') sentence[0] = static_cast<char>(sentence[0] - 32);
  return sentence;
}

}  // namespace

std::string describe_ranks(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    if (j >= i + 2) {
      text += fmt::format("{}-{}", ranks[i], ranks[j]);
    } else {
      text += j == i ? std::to_string(ranks[i]) : fmt::format("{}, {}", ranks[i], ranks[j]);
    }
    i = j + 1;
  }
  return text;
}

std::string hang_verdict(const std::vector<RankRecord>& records, int world_size) {
  if (records.empty()) return {};
  world_size = std::clamp(world_size, 1, kMostRanks);
  std::map<int, RankRecord> by_rank;  // a rank's latest record
  for (const RankRecord& r : records) {
    auto [it, inserted] = by_rank.emplace(r.rank, r);
    if (!inserted && r.written_us > it->second.written_us) it->second = r;
  }
  std::vector<std::string> sentences;
  const std::vector<Awaited> awaited = awaited_collectives(by_rank);
  for (std::size_t i = 0; i < awaited.size() && i < kNamesListed; ++i)
    sentences.push_back(describe_awaited(awaited[i]));
  if (awaited.size() > kNamesListed) {
    sentences.push_back(fmt::format("{} more collectives are awaited", awaited.size() - kNamesListed));
  }
  const std::optional<Crossed> crossed = crossed_pair(awaited);
  if (crossed) sentences.push_back(describe_crossed(*crossed, by_rank));

  std::vector<int> idle;
  for (const auto& [rank, record] : by_rank) {
    if (std::none_of(record.collectives.begin(), record.collectives.end(), in_flight)) {
      idle.push_back(rank);
      sentences.push_back(describe_idle(record));
    }
  }
  std::vector<int> silent;
  for (int rank = 0; rank < world_size; ++rank) {
    if (!by_rank.contains(rank)) silent.push_back(rank);
  }
  if (!silent.empty()) sentences.push_back(ranks_word(silent) + " wrote no record (exited, killed or stuck hard)");

  // Where to look first: two ranks that parted ways, else whoever holds up the oldest wait,
  // else whoever is outside dtrain.
  std::vector<int> culprits;
  if (crossed) {
    culprits = {crossed->first_rank, crossed->second_rank};
  } else if (!awaited.empty() && !awaited.front().absent.empty()) {
    culprits = awaited.front().absent;
  } else if (!idle.empty()) {
    culprits = idle;
  } else {
    culprits = silent;
  }

  const RankRecord& any = by_rank.begin()->second;
  std::string paragraph = fmt::format("Flight records of {} of {} ranks (written on: {}). ", by_rank.size(), world_size,
                                      reason_head(any.reason));
  for (const std::string& s : sentences) paragraph += capitalised(s) + ". ";
  if (!culprits.empty()) {
    paragraph += fmt::format("Look at {} first.", ranks_word(culprits));
  } else {
    paragraph.pop_back();
  }
  return paragraph;
}

}  // namespace dtrain::flight_record
