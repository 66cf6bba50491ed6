// The client side of the launcher's rendezvous key-value store, as a gloo Store: ranks
// publish their addresses under keys and read each other's. Every request carries the job
// token; the launcher refuses requests without it.
#pragma once

#include <chrono>
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
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // Tells the launcher this rank reached rendezvous (it enforces --start-timeout with this).
  void report_ready(int rank);

 private:
  rendezvous::RendezvousClient client_;
  std::chrono::milliseconds timeout_;
};

}  // namespace dtrain::runtime
