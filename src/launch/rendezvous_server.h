#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::launch {

// The job's key-value store, served over HTTP from a thread of the launcher.
// Workers use it to exchange addresses at init() and to announce readiness.
//
// Protocol (the runtime's client depends on it exactly):
//   every request carries "X-Dtrain-Token: <job token>", else
//     403 "dtrain rendezvous: bad or missing job token"
//   PUT  /v1/kv/<key>     body = raw bytes          -> 200
//   GET  /v1/kv/<key>     -> 200 with the bytes, or 404 when absent (clients poll)
//   POST /v1/ready/<rank> -> 200, marks the rank as having reached rendezvous
// Keys match [A-Za-z0-9._/:-]+. Values live in memory for the launch's lifetime.
class RendezvousServer {
 public:
  static constexpr const char* kTokenHeader = "X-Dtrain-Token";
  static constexpr const char* kBadTokenBody = "dtrain rendezvous: bad or missing job token";

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
