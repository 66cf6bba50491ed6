#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace httplib {
class Client;
class Result;
}  // namespace httplib

#include "dtrain/error.h"

namespace dtrain::rendezvous {

// The store did not answer at all (no connection, or it broke): unlike a refusal, this may
// pass (a network partition that heals, or one the launcher resolves by stopping this rank).
class StoreUnreachable : public Error {
 public:
  using Error::Error;
};

// A client of the launcher's key-value store (rendezvous/protocol.h): what ranks use to
// meet at init() and what parameter servers use to publish their addresses. Every request
// carries the job token; failures are dtrain::Error naming the store (StoreUnreachable when
// it did not answer).
class RendezvousClient {
 public:
  RendezvousClient(const std::string& host, int port, std::string token);
  ~RendezvousClient();

  void set(const std::string& key, const std::string& value);
  // The value, or nothing while the key is absent.
  std::optional<std::string> try_get(const std::string& key);
  // Waits (on the store, not by polling) until the key exists; throws dtrain::Error naming
  // the key after `timeout`.
  std::string wait_get(const std::string& key, std::chrono::milliseconds timeout);
  // The values of all `keys`, in their order, once every one exists: one request however
  // many keys (the store waits), where reading them one by one costs a request each. Throws
  // dtrain::Error naming the keys still missing after `timeout`.
  std::vector<std::string> wait_get_all(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  // Polls until the store answers (any answer; a refused token is an Error); throws
  // dtrain::Error naming the store after `timeout`. For stores that start beside the ranks
  // (rank 0 serves a bare srun's), which the others may reach before they listen.
  void wait_until_reachable(std::chrono::milliseconds timeout);
  // Tells the launcher this rank (or service) started; it enforces --start-timeout with this.
  void report_ready(int rank);

  std::string where() const;

 private:
  // Throws for the answers any request may get: none (StoreUnreachable), a refused token, a
  // store of another protocol version (naming both versions).
  void refuse_unusable_answer(const httplib::Result& result) const;

  std::string host_;
  int port_;
  std::string token_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace dtrain::rendezvous
