// Where the ranks of a group meet to connect: their numbers in the group, the launcher's
// rendezvous store, and the key prefix that keeps one group's keys (and one init()'s) apart.
// Every engine that connects through the store (Gloo, dtrain's TCP mesh) starts from this.
#pragma once

#include <chrono>
#include <string>

namespace dtrain::runtime {

struct GroupRendezvous {
  int rank = 0;
  int size = 1;
  std::string store_host;
  int store_port = 0;
  std::string token;
  std::string key_prefix;  // unique per job, init() and group
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
};

}  // namespace dtrain::runtime
