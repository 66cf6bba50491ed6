#include "rendezvous/rendezvous_server.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "dtrain/error.h"
#include "rendezvous/protocol.h"

namespace dtrain::rendezvous {
namespace {

// Compares without stopping at the first difference, so response timing does
// not reveal how much of a guessed token was right.
bool same_token(const std::string& given, const std::string& expected) {
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  }
  return diff == 0;
}

}  // namespace

struct RendezvousServer::Impl {
  std::string token;
  int world_size;
  httplib::Server server;
  std::thread thread;
  int port = 0;

  mutable std::mutex mutex;
  std::map<std::string, std::string> values;
  std::set<int> ready;

  Impl(std::string t, int n) : token(std::move(t)), world_size(n) {}

  void install_routes() {
    using httplib::Request;
    using httplib::Response;

    server.set_pre_routing_handler([this](const Request& req, Response& res) {
      if (!same_token(req.get_header_value(kTokenHeader), token)) {
        res.status = 403;
        res.set_content(kBadTokenBody, "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
      const std::string version = req.get_header_value(kVersionHeader);
      if (version != std::to_string(kProtocolVersion)) {
        res.status = kOtherVersionStatus;
        res.set_header(kVersionHeader, std::to_string(kProtocolVersion));
        res.set_content(
            fmt::format("dtrain rendezvous: this store speaks protocol version {}, the request {}", kProtocolVersion,
                        version.empty() ? "none (a dtrain build before versions)" : version),
            "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });

    static const char* kKeyRoute = R"(/v1/kv/([A-Za-z0-9._/:\-]+))";
    server.Put(kKeyRoute, [this](const Request& req, Response& res) {
      {
        std::lock_guard lock(mutex);
        values[req.matches[1]] = req.body;
      }
      res.status = 200;
    });
    server.Get(kKeyRoute, [this](const Request& req, Response& res) {
      std::lock_guard lock(mutex);
      auto it = values.find(req.matches[1]);
      if (it == values.end()) {
        res.status = 404;
        return;
      }
      res.status = 200;
      res.set_content(it->second, "application/octet-stream");
    });
    server.Post(R"(/v1/ready/([0-9]+))", [this](const Request& req, Response& res) {
      std::string text = req.matches[1];
      int rank = -1;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), rank);
      if (ec != std::errc() || end != text.data() + text.size() || rank >= world_size) {
        res.status = 400;
        res.set_content(fmt::format("dtrain rendezvous: rank {} is not in [0, {})", text, world_size), "text/plain");
        return;
      }
      std::lock_guard lock(mutex);
      ready.insert(rank);
      res.status = 200;
    });
  }
};

RendezvousServer::RendezvousServer(std::string token, int world_size)
    : impl_(std::make_unique<Impl>(std::move(token), world_size)) {}

RendezvousServer::~RendezvousServer() { stop(); }

int RendezvousServer::start(const std::string& bind_address, int requested_port) {
  // Clients may hold keep-alive connections while polling; give every rank a
  // worker thread (within reason) so polls do not queue behind each other.
  size_t threads = std::clamp<size_t>(static_cast<size_t>(impl_->world_size) + 4, 8, 256);
  impl_->server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl_->server.set_keep_alive_timeout(2);
  impl_->server.set_tcp_nodelay(true);  // answers are small writes too (see the client)
  impl_->server.set_payload_max_length(256u << 20);
  impl_->install_routes();

  int port = requested_port;
  if (requested_port == 0) {
    port = impl_->server.bind_to_any_port(bind_address);
  } else if (!impl_->server.bind_to_port(bind_address, requested_port)) {
    port = -1;
  }
  if (port <= 0) {
    throw Error(requested_port == 0
                    ? fmt::format("dtrain: cannot start the rendezvous server on {}: bind failed", bind_address)
                    : fmt::format("dtrain: cannot start the rendezvous server on {}:{}: the port is taken or "
                                  "not allowed",
                                  bind_address, requested_port));
  }
  impl_->port = port;
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() only takes effect once the accept loop runs; wait for it so an
  // early stop() cannot be lost.
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void RendezvousServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

int RendezvousServer::port() const { return impl_->port; }

bool RendezvousServer::is_ready(int rank) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->ready.count(rank) > 0;
}

std::vector<int> RendezvousServer::ready_ranks() const {
  std::lock_guard lock(impl_->mutex);
  return {impl_->ready.begin(), impl_->ready.end()};
}

std::optional<std::string> RendezvousServer::value(const std::string& key) const {
  std::lock_guard lock(impl_->mutex);
  auto it = impl_->values.find(key);
  if (it == impl_->values.end()) return std::nullopt;
  return it->second;
}

void RendezvousServer::set(const std::string& key, std::string value) {
  std::lock_guard lock(impl_->mutex);
  impl_->values[key] = std::move(value);
}

}  // namespace dtrain::rendezvous
