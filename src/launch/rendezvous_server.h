#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::launch {

// The job's key-value store, served over HTTP from a thread of the launcher.
// Workers use it to exchange addresses at init() and to announce readiness.
//
// The protocol is rendezvous/protocol.h, shared with the clients.
class RendezvousServer {
 public:
  RendezvousServer(std::string token, int world_size);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  // Binds `bind_address` on an ephemeral port and starts serving; returns the
  // port. Throws LaunchError (runtime) when binding fails.
  int start(const std::string& bind_address);
  void stop();

  int port() const;
  bool is_ready(int rank) const;
  std::vector<int> ready_ranks() const;
  std::optional<std::string> value(const std::string& key) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::launch
