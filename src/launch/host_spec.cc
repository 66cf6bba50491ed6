#include "launch/host_spec.h"

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "launch/launch_error.h"

namespace dtrain::launch {
namespace {

constexpr int kMaxSlotsPerHost = 1 << 20;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

bool valid_host_name(std::string_view name) {
  if (name.empty() || name.front() == '-') return false;
  for (char c : name) {
    if (is_blank(c) || c == ',' || c == ':' || c == '=' || c == '#') return false;
  }
  return true;
}

// Parses a positive slot count; nullopt-like -1 on anything else.
int parse_slot_count(std::string_view text) {
  if (text.empty()) return -1;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return -1;
  if (value < 1 || value > kMaxSlotsPerHost) return -1;
  return value;
}

void reject_duplicates(const std::vector<HostSlots>& hosts, std::string_view where) {
  std::set<std::string> seen;
  for (const auto& h : hosts) {
    if (!seen.insert(h.name).second) {
      throw LaunchError::usage(fmt::format("{}host '{}' is listed more than once", where, h.name));
    }
  }
}

}  // namespace

std::vector<HostSlots> parse_host_list(std::string_view text) {
  if (trim(text).empty()) throw LaunchError::usage("-H: empty host list");
  std::vector<HostSlots> hosts;
  std::string_view rest = text;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    size_t colon = entry.find(':');
    HostSlots host;
    host.name = std::string(entry.substr(0, colon));
    if (!valid_host_name(host.name)) {
      throw LaunchError::usage(fmt::format("-H: bad entry '{}' in '{}' (expected host or host:slots)", entry, text));
    }
    if (colon != std::string_view::npos) {
      host.slots = parse_slot_count(entry.substr(colon + 1));
      if (host.slots < 1) {
        throw LaunchError::usage(
            fmt::format("-H: bad slot count in '{}' (expected host:N with N a positive integer)", entry));
      }
    }
    hosts.push_back(std::move(host));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  reject_duplicates(hosts, "-H: ");
  return hosts;
}

std::vector<HostSlots> parse_hostfile_text(std::string_view text, std::string_view origin) {
  std::vector<HostSlots> hosts;
  int line_number = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    ++line_number;
    size_t newline = rest.find('\n');
    std::string_view line = rest.substr(0, newline);
    rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);

    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;

    auto fail = [&](std::string_view why) {
      return LaunchError::usage(
          fmt::format("hostfile {} line {}: {} (expected 'host' or 'host slots=N')", origin, line_number, why));
    };

    // Split into whitespace-separated words.
    std::vector<std::string_view> words;
    std::string_view w = line;
    while (!w.empty()) {
      size_t end = 0;
      while (end < w.size() && !is_blank(w[end])) ++end;
      words.push_back(w.substr(0, end));
      w = trim(w.substr(end));
    }

    HostSlots host;
    host.name = std::string(words[0]);
    if (!valid_host_name(host.name)) throw fail(fmt::format("bad host name '{}'", words[0]));
    if (words.size() > 2) throw fail(fmt::format("unexpected '{}'", words[2]));
    if (words.size() == 2) {
      constexpr std::string_view kSlots = "slots=";
      if (!words[1].starts_with(kSlots)) throw fail(fmt::format("unexpected '{}'", words[1]));
      host.slots = parse_slot_count(words[1].substr(kSlots.size()));
      if (host.slots < 1) throw fail(fmt::format("bad slot count '{}'", words[1]));
    }
    hosts.push_back(std::move(host));
  }
  if (hosts.empty()) throw LaunchError::usage(fmt::format("hostfile {} lists no hosts", origin));
  reject_duplicates(hosts, fmt::format("hostfile {}: ", origin));
  return hosts;
}

std::vector<HostSlots> read_hostfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw LaunchError::usage(fmt::format("cannot read hostfile '{}': {}", path, std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return parse_hostfile_text(contents.str(), path);
}

std::string describe_hosts(const std::vector<HostSlots>& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}:{}", h.name, h.slots);
  }
  return out;
}

int total_slots(const std::vector<HostSlots>& hosts) {
  long total = 0;
  for (const auto& h : hosts) total += h.slots;
  return total > (1L << 30) ? (1 << 30) : static_cast<int>(total);
}

}  // namespace dtrain::launch
