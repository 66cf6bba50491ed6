#pragma once

// The HTTP side of `dtrain serve`: SageMaker's inference container contract
// (GET /ping, POST /invocations on port 8080) plus GET /metrics. Requests go
// through an InferenceQueue to the model's workers; this file knows nothing of
// models.
#include <cstddef>
#include <memory>
#include <string>

#include "serving/inference_queue.h"
#include "serving/request_metrics.h"

namespace dtrain::serving {

struct ServerOptions {
  std::string host = "0.0.0.0";
  int port = 8080;                             // 0: any free port (tests)
  size_t max_payload_bytes = size_t{6} << 20;  // SageMaker's limit for real-time endpoints
  // Connections served at once. Each waits for its request's inference, so
  // this should exceed workers + queue capacity: then overload is refused by
  // the queue (503) instead of hidden in accept backlogs.
  int http_threads = 48;
  bool log_requests = true;  // one line per request on the default logger
};

class InferenceServer {
 public:
  InferenceServer(ServerOptions options, RequestMetrics& metrics);
  ~InferenceServer();
  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  // Binds the listening socket and returns its port. Throws std::runtime_error
  // naming the address when it cannot.
  int bind();
  // Serves until stop(), then returns once every request in flight has been
  // answered. Call after bind().
  void serve();
  // From now on /ping answers 200 and /invocations runs on `queue`, which
  // must outlive serve().
  void set_model(InferenceQueue& queue);
  // Closes the listening socket; thread-safe, async-signal-unsafe (call it
  // from a thread that waits for the signal, not from a handler).
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::serving
