#include "slurm/hostlist.h"

#include <charconv>

#include <fmt/format.h>

namespace dtrain::slurm {
namespace {

// More hosts than any cluster has: a list that expands beyond this is a mistake or an attack,
// refused before its names are made (brackets multiply: "a[1-99999]b[1-99999]" is 10^10 names).
constexpr size_t kMaxHosts = 1'000'000;

[[noreturn]] void malformed(std::string_view list, std::string_view why) {
  throw SlurmError(fmt::format("host list '{}' is malformed: {}", list, why));
}

[[noreturn]] void too_many_hosts(std::string_view list) {
  malformed(list, fmt::format("it names more than {} hosts", kMaxHosts));
}

unsigned long parse_number(std::string_view list, std::string_view digits) {
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
    malformed(list, fmt::format("'{}' is not a number", digits));
  }
  return value;
}

// The members of one bracket's content ("1-3,07"), zero-padded to each range's lower bound.
std::vector<std::string> expand_bracket(std::string_view list, std::string_view content) {
  std::vector<std::string> members;
  while (true) {
    const size_t comma = content.find(',');
    std::string_view item = content.substr(0, comma);
    const size_t dash = item.find('-');
    std::string_view low = item.substr(0, dash);
    std::string_view high = dash == std::string_view::npos ? low : item.substr(dash + 1);
    const unsigned long first = parse_number(list, low);
    const unsigned long last = parse_number(list, high);
    if (last < first) malformed(list, fmt::format("the range '{}' runs backwards", item));
    if (last - first > 100000) malformed(list, fmt::format("the range '{}' is too long", item));
    if (members.size() + (last - first + 1) > kMaxHosts) too_many_hosts(list);
    for (unsigned long n = first; n <= last; ++n) members.push_back(fmt::format("{:0{}}", n, low.size()));
    if (comma == std::string_view::npos) break;
    content.remove_prefix(comma + 1);
  }
  return members;
}

// One name with zero or more brackets ("r[1-2]n[3,5]") into every host it stands for, at most
// `room` of them.
std::vector<std::string> expand_name(std::string_view list, std::string_view name, size_t room) {
  std::vector<std::string> hosts = {""};
  while (!name.empty()) {
    const size_t open = name.find('[');
    std::string_view literal = name.substr(0, open);
    if (literal.find(']') != std::string_view::npos) malformed(list, "']' without '['");
    for (auto& h : hosts) h += literal;
    if (open == std::string_view::npos) break;
    const size_t close = name.find(']', open);
    if (close == std::string_view::npos) malformed(list, "'[' without ']'");
    // The first bracket varies slowest, as in Slurm's order.
    const std::vector<std::string> members = expand_bracket(list, name.substr(open + 1, close - open - 1));
    if (hosts.size() * members.size() > room) too_many_hosts(list);  // both at most kMaxHosts: no overflow
    std::vector<std::string> grown;
    for (const auto& h : hosts) {
      for (const auto& member : members) grown.push_back(h + member);
    }
    hosts = std::move(grown);
    name.remove_prefix(close + 1);
  }
  if (hosts.size() > room) too_many_hosts(list);
  return hosts;
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const bool end = i == list.size();
    if (!end && list[i] == '[') ++depth;
    if (!end && list[i] == ']') --depth;
    if (depth < 0 || depth > 1) malformed(list, "brackets do not pair up");
    if (end || (list[i] == ',' && depth == 0)) {
      std::string_view name = list.substr(start, i - start);
      if (name.empty()) malformed(list, "an empty host name");
      for (auto& h : expand_name(list, name, kMaxHosts - hosts.size())) hosts.push_back(std::move(h));
      start = i + 1;
    }
  }
  if (depth != 0) malformed(list, "'[' without ']'");
  return hosts;
}

std::vector<int> expand_tasks_per_node(std::string_view text) {
  auto bad = [&text](std::string_view why) {
    throw SlurmError(fmt::format("tasks per node '{}' is malformed: {}", text, why));
  };
  auto number = [&bad](std::string_view digits) {
    int value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || value < 1) {
      bad(fmt::format("'{}' is not a positive number", digits));
    }
    return value;
  };
  std::vector<int> counts;
  std::string_view rest = text;
  if (rest.empty()) bad("it is empty");
  while (true) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    int repeat = 1;
    if (const size_t paren = item.find("(x"); paren != std::string_view::npos) {
      if (!item.ends_with(')')) bad(fmt::format("'{}' lacks its ')'", item));
      repeat = number(item.substr(paren + 2, item.size() - paren - 3));
      item = item.substr(0, paren);
    }
    const int tasks = number(item);
    if (counts.size() + static_cast<size_t>(repeat) > 1000000) bad("too many nodes");
    counts.insert(counts.end(), static_cast<size_t>(repeat), tasks);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return counts;
}

}  // namespace dtrain::slurm
