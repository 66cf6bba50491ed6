#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::rendezvous {

// The job's key-value store, served over HTTP from a thread: of the launcher (`dtrain run`),
// or of rank 0 itself when Slurm started the ranks and no launcher is there.
// Workers use it to exchange addresses at init() and to announce readiness.
//
// The protocol is rendezvous/protocol.h, shared with the clients.
class RendezvousServer {
 public:
  RendezvousServer(std::string token, int world_size);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  // Binds `bind_address` on `port` (0: an ephemeral one) and starts serving; returns the
  // port. Throws dtrain::Error naming the address and port when binding fails.
  int start(const std::string& bind_address, int port = 0);
  void stop();

  int port() const;
  bool is_ready(int rank) const;
  std::vector<int> ready_ranks() const;
  std::optional<std::string> value(const std::string& key) const;
  // Stores `value` under `key` as a client's PUT would (the elastic driver publishes rounds so).
  void set(const std::string& key, std::string value);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::rendezvous
