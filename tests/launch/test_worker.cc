// A worker for end-to-end tests of `dtrain run`: it talks to the launcher's
// rendezvous store exactly as the runtime does, using only the DTRAIN_*
// environment it was given.
//   exchange        PUT its rank, GET every peer's, print them, POST ready
//   ready-then-sleep S   POST ready, then sleep S seconds
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <httplib.h>

#include "rendezvous/protocol.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  if (!v) {
    std::fprintf(stderr, "test_worker: %s is not set\n", name);
    std::exit(3);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  std::string mode = argv[1];
  int rank = std::stoi(env("DTRAIN_RANK"));
  int size = std::stoi(env("DTRAIN_SIZE"));
  httplib::Client client(env("DTRAIN_RENDEZVOUS_ADDR"), std::stoi(env("DTRAIN_RENDEZVOUS_PORT")));
  client.set_default_headers(
      {{dtrain::rendezvous::kTokenHeader, env("DTRAIN_JOB_TOKEN")},
       {dtrain::rendezvous::kVersionHeader, std::to_string(dtrain::rendezvous::kProtocolVersion)}});
  client.set_connection_timeout(5);

  if (mode == "exchange") {
    auto put = client.Put("/v1/kv/test/rank/" + std::to_string(rank), "hello from " + std::to_string(rank),
                          "application/octet-stream");
    if (!put || put->status != 200) return 4;
    std::string seen;
    for (int peer = 0; peer < size; ++peer) {
      for (int attempt = 0;; ++attempt) {
        auto res = client.Get("/v1/kv/test/rank/" + std::to_string(peer));
        if (res && res->status == 200) {
          seen += "[" + res->body + "]";
          break;
        }
        if (attempt > 1000) return 5;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    std::printf("rank %d saw %s\n", rank, seen.c_str());
  }
  auto ready = client.Post("/v1/ready/" + std::to_string(rank));
  if (!ready || ready->status != 200) return 6;
  if (mode == "ready-then-sleep" && argc > 2) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(argv[2])));
  }
  return 0;
}
