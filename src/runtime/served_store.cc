#include "runtime/served_store.h"

#include <memory>

#include "concurrency/mutex.h"
#include "dtrain/error.h"
#include "rendezvous/rendezvous_server.h"

namespace dtrain::runtime {
namespace {

struct ServedStore {
  concurrency::Mutex mutex;
  std::unique_ptr<rendezvous::RendezvousServer> server DTRAIN_GUARDED_BY(mutex);
  int size DTRAIN_GUARDED_BY(mutex) = 0;
};

ServedStore& served_store() {
  static ServedStore* store = new ServedStore();  // never destroyed: ranks may still be reading
  return *store;
}

}  // namespace

int serve_store(const std::string& token, int size, int port) {
  ServedStore& store = served_store();
  concurrency::MutexLock lock(store.mutex);
  if (store.server) {
    if (store.size != size || (port != 0 && port != store.server->port())) {
      throw Error("dtrain: this process already serves a rendezvous store for " + std::to_string(store.size) +
                  " ranks on port " + std::to_string(store.server->port()) + ", not one for " + std::to_string(size) +
                  " ranks" + (port != 0 ? " on port " + std::to_string(port) : ""));
    }
    return store.server->port();
  }
  auto server = std::make_unique<rendezvous::RendezvousServer>(token, size);
  const int bound = server->start("0.0.0.0", port);
  store.server = std::move(server);
  store.size = size;
  return bound;
}

}  // namespace dtrain::runtime
