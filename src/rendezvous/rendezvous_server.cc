#include "rendezvous/rendezvous_server.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include <sys/socket.h>

#include <fmt/format.h>
#include <httplib.h>

#include "concurrency/mutex.h"
#include "dtrain/error.h"
#include "rendezvous/key_batch.h"
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
  int listening_socket = -1;

  mutable concurrency::Mutex mutex;
  std::map<std::string, std::string> values DTRAIN_GUARDED_BY(mutex);
  std::set<int> ready DTRAIN_GUARDED_BY(mutex);
  // The batched waits in progress, each under the first key it still misses: setting a key
  // wakes only the waits for that key (a world of N ranks each waiting on N keys would
  // otherwise wake N waits N times each).
  std::multimap<std::string, concurrency::ConditionVariable*> waiting DTRAIN_GUARDED_BY(mutex);
  bool stopping DTRAIN_GUARDED_BY(mutex) = false;

  Impl(std::string t, int n) : token(std::move(t)), world_size(n) {}

  void store(const std::string& key, std::string value) {
    concurrency::MutexLock lock(mutex);
    values[key] = std::move(value);
    const auto [first, last] = waiting.equal_range(key);
    for (auto it = first; it != last; ++it) it->second->notify_one();
  }

  // Waits until every key exists or `deadline` passes; returns the keys still missing (none:
  // all there) and, when none are, their values.
  std::vector<std::string> wait_for(const std::vector<std::string>& keys,
                                    std::chrono::steady_clock::time_point deadline, std::vector<std::string>& found) {
    concurrency::ConditionVariable woken;
    concurrency::MutexLock lock(mutex);
    std::size_t present = 0;  // keys[0, present) exist; values are never removed
    while (true) {
      while (present < keys.size() && values.count(keys[present]) > 0) ++present;
      if (present == keys.size() || stopping) break;
      const auto entry = waiting.emplace(keys[present], &woken);
      const bool timed_out = woken.wait_until(lock, deadline) == std::cv_status::timeout;
      waiting.erase(entry);
      if (timed_out) {
        while (present < keys.size() && values.count(keys[present]) > 0) ++present;
        break;
      }
    }
    std::vector<std::string> missing;
    for (std::size_t i = present; i < keys.size(); ++i) {
      if (values.count(keys[i]) == 0) missing.push_back(keys[i]);
    }
    if (missing.empty()) {
      found.reserve(keys.size());
      for (const std::string& key : keys) found.push_back(values.at(key));
    }
    return missing;
  }

  void stop_waits() {
    concurrency::MutexLock lock(mutex);
    stopping = true;
    for (auto& [key, woken] : waiting) woken->notify_one();
  }

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
      store(req.matches[1], req.body);
      res.status = 200;
    });
    server.Get(kKeyRoute, [this](const Request& req, Response& res) {
      concurrency::MutexLock lock(mutex);
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
      concurrency::MutexLock lock(mutex);
      ready.insert(rank);
      res.status = 200;
    });
    server.Post(kWaitPath, [this](const Request& req, Response& res) { answer_wait(req, res); });
  }

  void answer_wait(const httplib::Request& req, httplib::Response& res) {
    std::vector<std::string> keys;
    int wait_ms = kMaxWaitMs;
    try {
      keys = parse_key_list(req.body, kMaxWaitKeys);
      if (req.has_param(kWaitTimeoutParam)) {
        const std::string text = req.get_param_value(kWaitTimeoutParam);
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), wait_ms);
        if (ec != std::errc() || end != text.data() + text.size() || wait_ms < 0) {
          throw Error(fmt::format("dtrain rendezvous: {}={} is not a number of milliseconds", kWaitTimeoutParam, text));
        }
      }
    } catch (const Error& e) {
      res.status = 400;
      res.set_content(e.what(), "text/plain");
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::min(wait_ms, kMaxWaitMs));
    std::vector<std::string> found;
    const std::vector<std::string> missing = wait_for(keys, deadline, found);
    if (!missing.empty()) {
      res.status = 404;
      res.set_content(encode_key_list(missing), "text/plain");
      return;
    }
    res.status = 200;
    res.set_content(encode_values(found), "application/octet-stream");
  }
};

RendezvousServer::RendezvousServer(std::string token, int world_size)
    : impl_(std::make_unique<Impl>(std::move(token), world_size)) {}

RendezvousServer::~RendezvousServer() { stop(); }

int RendezvousServer::start(const std::string& bind_address, int requested_port) {
  // A client holds its kept-alive connection, and a batched wait holds its thread, so every
  // rank gets a worker thread: a pool smaller than the world queues the ranks beyond it
  // behind the waits until their read timeout. Threads are cheap beside a rank (stacks are
  // reserved, not resident: docs/scaling.md measures 1,024 ranks). Beyond 8,192 ranks the
  // rest queue; a world that size wants a store that does not hold a thread per rank.
  size_t threads = std::clamp<size_t>(static_cast<size_t>(impl_->world_size) + 8, 16, 8192 + 8);
  impl_->server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  impl_->server.set_keep_alive_timeout(2);
  impl_->server.set_tcp_nodelay(true);  // answers are small writes too (see the client)
  impl_->server.set_payload_max_length(256u << 20);
  impl_->server.set_socket_options([this](socket_t socket) {
    httplib::default_socket_options(socket);
    impl_->listening_socket = socket;
  });
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
  // cpp-httplib listens with a backlog of 5: of ranks connecting at once, those beyond it
  // have their SYN dropped and retry 1 s later (then 2, 4, 8 s: 64 ranks met in 14 s). Listen
  // again with the most the system allows, which widens the queue of the same socket.
  if (impl_->listening_socket >= 0) ::listen(impl_->listening_socket, SOMAXCONN);
  impl_->port = port;
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  // stop() only takes effect once the accept loop runs; wait for it so an
  // early stop() cannot be lost.
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return port;
}

void RendezvousServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->stop_waits();  // the pool joins its threads, so none may still be waiting
  impl_->server.stop();
  impl_->thread.join();
}

int RendezvousServer::port() const { return impl_->port; }

bool RendezvousServer::is_ready(int rank) const {
  concurrency::MutexLock lock(impl_->mutex);
  return impl_->ready.count(rank) > 0;
}

std::vector<int> RendezvousServer::ready_ranks() const {
  concurrency::MutexLock lock(impl_->mutex);
  return {impl_->ready.begin(), impl_->ready.end()};
}

std::optional<std::string> RendezvousServer::value(const std::string& key) const {
  concurrency::MutexLock lock(impl_->mutex);
  auto it = impl_->values.find(key);
  if (it == impl_->values.end()) return std::nullopt;
  return it->second;
}

void RendezvousServer::set(const std::string& key, std::string value) { impl_->store(key, std::move(value)); }

}  // namespace dtrain::rendezvous
