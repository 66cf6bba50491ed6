#include "runtime/transport/tcp/bind_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>

#include <memory>

#include "dtrain/dtrain.h"

namespace dtrain::runtime {
namespace {

std::string ipv4_text(const sockaddr* address) {
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, text, sizeof(text));
  return text;
}

std::string interface_ipv4(const std::string& iface) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) throw Error("dtrain: cannot list this host's network interfaces");
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> guard(list, &::freeifaddrs);
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET && iface == it->ifa_name) return ipv4_text(it->ifa_addr);
  }
  throw Error("dtrain: network interface '" + iface +
              "' (DTRAIN_IFACE / --network-interface) does not exist on this host or has no IPv4 address");
}

}  // namespace

std::string resolve_ipv4(const std::string& hostname) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(hostname.c_str(), nullptr, &hints, &found);
  if (error != 0 || !found) {
    throw Error("dtrain: this rank's host name '" + hostname + "' does not resolve to an IPv4 address (" +
                gai_strerror(error) + "); set DTRAIN_IFACE (--network-interface) or DTRAIN_HOSTNAME");
  }
  std::string text = ipv4_text(found->ai_addr);
  ::freeaddrinfo(found);
  return text;
}

std::string bind_address(const std::string& iface, const std::string& hostname) {
  return iface.empty() ? resolve_ipv4(hostname) : interface_ipv4(iface);
}

}  // namespace dtrain::runtime
