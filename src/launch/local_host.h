#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace dtrain::launch {

// This machine's name as gethostname() reports it.
std::string local_hostname();

// True when `host` names this machine: "localhost", any 127.x address, the
// hostname (or its short form), or an address of a local interface.
bool is_local_host(std::string_view host);

// The IPv4 address of network interface `iface` (e.g. "eth0"), if it has one.
std::optional<std::string> interface_ipv4(std::string_view iface);

// An IPv4 address other hosts can use to reach this machine: the address the
// hostname resolves to when that is not a loopback address, otherwise the
// first non-loopback interface address, otherwise 127.0.0.1.
std::string reachable_ipv4();

}  // namespace dtrain::launch
