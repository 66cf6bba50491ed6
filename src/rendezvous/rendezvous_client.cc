#include "rendezvous/rendezvous_client.h"

#include <algorithm>
#include <thread>

#include <httplib.h>

#include "dtrain/error.h"
#include "rendezvous/key_batch.h"
#include "rendezvous/protocol.h"

namespace dtrain::rendezvous {

RendezvousClient::RendezvousClient(const std::string& host, int port, std::string token)
    : host_(host), port_(port), token_(std::move(token)), client_(std::make_unique<httplib::Client>(host, port)) {
  client_->set_connection_timeout(5, 0);
  client_->set_read_timeout(30, 0);
  client_->set_keep_alive(true);
  // A request is its headers and a small body in separate writes: with Nagle's algorithm the
  // second waits for the server's delayed ACK, about 40 ms a request on loopback.
  client_->set_tcp_nodelay(true);
  client_->set_default_headers({{kTokenHeader, token_}, {kVersionHeader, std::to_string(kProtocolVersion)}});
}

RendezvousClient::~RendezvousClient() = default;

std::string RendezvousClient::where() const { return "rendezvous store " + host_ + ":" + std::to_string(port_); }

void RendezvousClient::refuse_unusable_answer(const httplib::Result& result) const {
  if (!result)
    throw StoreUnreachable("dtrain: cannot reach the " + where() + ": " + httplib::to_string(result.error()));
  if (result->status == 403)
    throw Error("dtrain: the " + where() + " refused this rank's job token (DTRAIN_JOB_TOKEN)");
  if (result->status == kOtherVersionStatus) {
    const std::string theirs = result->get_header_value(kVersionHeader);
    throw Error("dtrain: the " + where() + " speaks rendezvous protocol version " + (theirs.empty() ? "?" : theirs) +
                ", this process version " + std::to_string(kProtocolVersion) +
                " (the launcher and this rank come from different dtrain builds)");
  }
}

void RendezvousClient::set(const std::string& key, const std::string& value) {
  auto result = client_->Put((kKeyPath + key).c_str(), value, "application/octet-stream");
  refuse_unusable_answer(result);
  if (result->status != 200) {
    throw Error("dtrain: the " + where() + " answered " + std::to_string(result->status) + " to setting '" + key + "'");
  }
}

std::optional<std::string> RendezvousClient::try_get(const std::string& key) {
  auto result = client_->Get((kKeyPath + key).c_str());
  refuse_unusable_answer(result);
  if (result->status == 404) return std::nullopt;
  if (result->status != 200) {
    throw Error("dtrain: the " + where() + " answered " + std::to_string(result->status) + " to reading '" + key + "'");
  }
  return std::move(result->body);
}

std::string RendezvousClient::wait_get(const std::string& key, std::chrono::milliseconds timeout) {
  return std::move(wait_get_all({key}, timeout).front());
}

std::vector<std::string> RendezvousClient::wait_get_all(const std::vector<std::string>& keys,
                                                        std::chrono::milliseconds timeout) {
  using std::chrono::steady_clock;
  const auto deadline = steady_clock::now() + timeout;
  const std::string body = encode_key_list(keys);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
    const long wait_ms = std::clamp<long>(left.count(), 0, kMaxWaitMs);
    const std::string path = std::string(kWaitPath) + "?" + kWaitTimeoutParam + "=" + std::to_string(wait_ms);
    auto result = client_->Post(path.c_str(), body, "text/plain");
    refuse_unusable_answer(result);
    if (result->status == 200) return decode_values(result->body, keys.size());
    if (result->status != 404) {
      throw Error("dtrain: the " + where() + " answered " + std::to_string(result->status) + " to waiting for '" +
                  keys.front() + "'" +
                  (keys.size() > 1 ? " and " + std::to_string(keys.size() - 1) + " more keys" : "") + ": " +
                  result->body);
    }
    if (steady_clock::now() >= deadline) {
      const std::vector<std::string> missing = parse_key_list(result->body, keys.size());
      throw Error("dtrain: timed out after " + std::to_string(timeout.count() / 1000) + " s waiting for '" +
                  missing.front() + "'" +
                  (missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more keys" : "") + " in the " +
                  where() + " (did every rank start?)");
    }
  }
}

void RendezvousClient::wait_until_reachable(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(10);
  while (true) {
    auto result = client_->Get((std::string(kKeyPath) + "reachable").c_str());
    if (result) {
      refuse_unusable_answer(result);
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error("dtrain: cannot reach the " + where() + " after " + std::to_string(timeout.count() / 1000) +
                  " s: " + httplib::to_string(result.error()) + " (did rank 0 start?)");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(200));
  }
}

void RendezvousClient::report_ready(int rank) {
  auto result = client_->Post((kReadyPath + std::to_string(rank)).c_str(), "", "text/plain");
  refuse_unusable_answer(result);
  if (result->status != 200) {
    throw Error("dtrain: the " + where() + " answered " + std::to_string(result->status) + " to rank " +
                std::to_string(rank) + "'s ready report");
  }
}

}  // namespace dtrain::rendezvous
