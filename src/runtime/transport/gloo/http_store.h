// The client side of the launcher's rendezvous key-value store, as a gloo Store: ranks
// publish their addresses under keys and read each other's. Every request carries the job
// token; the launcher refuses requests without it.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "rendezvous/rendezvous_client.h"

namespace dtrain::runtime {

class HttpStore final : public gloo::rendezvous::Store {
 public:
  HttpStore(const std::string& host, int port, std::string token, std::chrono::milliseconds timeout);
  ~HttpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;  // waits until the key exists
  // Waits for all `keys` in one request and keeps their values for the get() that follows
  // (Gloo's full mesh waits for a peer's key, then gets it: one request per peer, not two).
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  // The values of all `keys`, in one request once every one exists.
  std::vector<std::string> get_all(const std::vector<std::string>& keys);

  // Tells the launcher this rank reached rendezvous (it enforces --start-timeout with this).
  void report_ready(int rank);

 private:
  rendezvous::RendezvousClient client_;
  std::chrono::milliseconds timeout_;
  // Values wait() read and get() has not taken yet. A key's value does not change while a
  // store object lives (one per connect(), and ranks write their own keys once).
  std::map<std::string, std::string> waited_;
};

}  // namespace dtrain::runtime
