// The IPv4 address a rank listens on, which the other ranks connect to: the address of a
// network interface when the user names one (DTRAIN_IFACE, --network-interface), else what
// this rank's host name resolves to. Shared by Gloo's device and dtrain's own TCP mesh, so
// both sit on the same network.
#pragma once

#include <string>

namespace dtrain::runtime {

// The IPv4 address (dotted text) of `iface` if it is not empty, else of `hostname`. An
// interface without an IPv4 address, or a name that does not resolve, is an Error naming it.
std::string bind_address(const std::string& iface, const std::string& hostname);

// What `hostname` resolves to (IPv4, dotted text), or an Error naming it.
std::string resolve_ipv4(const std::string& hostname);

}  // namespace dtrain::runtime
