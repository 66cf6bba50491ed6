#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtrain::launch {

// One host and how many ranks it may run.
struct HostSlots {
  std::string name;
  int slots = 1;

  bool operator==(const HostSlots&) const = default;
};

// Parses a -H list: "host1:2,host2:4". A host without ":N" has one slot.
// Throws LaunchError (usage) naming the offending entry.
std::vector<HostSlots> parse_host_list(std::string_view text);

// Parses hostfile contents: one "host [slots=N]" per line, '#' starts a
// comment, blank lines are skipped. `origin` (the file name) is used in
// messages together with the 1-based line number.
std::vector<HostSlots> parse_hostfile_text(std::string_view text, std::string_view origin);

// Reads and parses a hostfile; a missing or unreadable file is a usage error.
std::vector<HostSlots> read_hostfile(const std::string& path);

// "a:2,b:3" — how the hosts are shown in messages.
std::string describe_hosts(const std::vector<HostSlots>& hosts);

int total_slots(const std::vector<HostSlots>& hosts);

}  // namespace dtrain::launch
