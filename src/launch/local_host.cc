#include "launch/local_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>
#include <memory>
#include <vector>

namespace dtrain::launch {
namespace {

std::string ipv4_text(const sockaddr* addr) {
  char text[INET_ADDRSTRLEN] = {};
  const auto* in = reinterpret_cast<const sockaddr_in*>(addr);
  ::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
  return text;
}

std::string ipv6_text(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
  ::inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
  return text;
}

struct InterfaceAddress {
  std::string iface;
  std::string address;
  bool ipv4;
};

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> result;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return result;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> guard(list, &::freeifaddrs);
  for (ifaddrs* it = list; it; it = it->ifa_next) {
    if (!it->ifa_addr) continue;
    if (it->ifa_addr->sa_family == AF_INET) {
      result.push_back({it->ifa_name, ipv4_text(it->ifa_addr), true});
    } else if (it->ifa_addr->sa_family == AF_INET6) {
      result.push_back({it->ifa_name, ipv6_text(it->ifa_addr), false});
    }
  }
  return result;
}

bool is_loopback_ipv4(std::string_view address) { return address.starts_with("127."); }

std::string_view short_name(std::string_view name) { return name.substr(0, name.find('.')); }

}  // namespace

std::string local_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

bool is_local_host(std::string_view host) {
  if (host == "localhost" || host == "localhost.localdomain" || host == "::1") return true;
  in_addr ignored{};
  std::string host_text(host);
  if (::inet_pton(AF_INET, host_text.c_str(), &ignored) == 1 && is_loopback_ipv4(host)) {
    return true;
  }
  std::string me = local_hostname();
  if (host == me) return true;
  // "node1" and "node1.cluster" name the same machine when one is the short form.
  if (host.find('.') == std::string_view::npos && host == short_name(me)) return true;
  for (const auto& a : interface_addresses()) {
    if (a.address == host) return true;
  }
  return false;
}

std::optional<std::string> interface_ipv4(std::string_view iface) {
  for (const auto& a : interface_addresses()) {
    if (a.ipv4 && a.iface == iface) return a.address;
  }
  return std::nullopt;
}

std::string reachable_ipv4() {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string hostname = local_hostname();
  if (::getaddrinfo(hostname.c_str(), nullptr, &hints, &found) == 0) {
    std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
    for (addrinfo* it = found; it; it = it->ai_next) {
      std::string address = ipv4_text(it->ai_addr);
      if (!is_loopback_ipv4(address)) return address;
    }
  }
  for (const auto& a : interface_addresses()) {
    if (a.ipv4 && !is_loopback_ipv4(a.address)) return a.address;
  }
  return "127.0.0.1";
}

}  // namespace dtrain::launch
