#include "serving/inference_server.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "serving/invocation.h"

namespace dtrain::serving {
namespace {

using Clock = std::chrono::steady_clock;

// When the current request's headers were read, and how long it took until its response
// was ready. httplib runs a request from pre-routing to the logger on one thread, so
// thread-locals carry them.
thread_local std::optional<Clock::time_point> request_start;
thread_local double request_seconds = 0;

const char* const kRoutes[] = {"/ping", "/invocations", "/metrics", "/execution-parameters"};

std::string route_label(const std::string& path) {
  for (const char* route : kRoutes) {
    if (path == route) return route;
  }
  return "other";
}

void answer_error(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  response.set_content(error_body(message), "application/json");
}

}  // namespace

struct InferenceServer::Impl {
  ServerOptions options;
  RequestMetrics& metrics;
  httplib::Server http;
  std::atomic<InferenceQueue*> queue{nullptr};

  Impl(ServerOptions o, RequestMetrics& m) : options(std::move(o)), metrics(m) {}

  void invocations(const httplib::Request& request, httplib::Response& response) {
    InferenceQueue* model = queue.load();
    if (!model)
      return answer_error(response, 503, "the model is still loading (GET /ping answers 200 once it is ready)");
    InvocationRequest invocation;
    invocation.content_type = media_type(request.get_header_value("Content-Type"));
    invocation.body = request.body;
    for (const auto& [key, value] : request.params) invocation.parameters[key] = value;
    parse_custom_attributes(request.get_header_value("X-Amzn-SageMaker-Custom-Attributes"), invocation.parameters);
    try {
      InvocationResponse answer = model->submit(std::move(invocation)).get();
      response.status = answer.status;
      response.set_content(std::move(answer.body), answer.content_type.c_str());
    } catch (const InvocationError& e) {
      answer_error(response, e.status(), e.what());
    } catch (const std::exception& e) {
      answer_error(response, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      answer_error(response, 500, "internal error");
    }
  }

  std::string metrics_text() {
    InferenceQueue* model = queue.load();
    return metrics.prometheus_text({
        {"dtrain_serve_model_ready", "1 once the model is loaded and /ping answers 200.", model ? 1.0 : 0.0},
        {"dtrain_serve_queue_waiting", "Requests waiting for an inference worker.",
         model ? static_cast<double>(model->waiting()) : 0.0},
        {"dtrain_serve_queue_running", "Requests an inference worker is running.",
         model ? static_cast<double>(model->running()) : 0.0},
        {"dtrain_serve_workers", "Inference workers (--workers).", model ? static_cast<double>(model->workers()) : 0.0},
        {"dtrain_serve_max_batch", "Most requests a worker runs as one batch (--max-batch).",
         model ? static_cast<double>(model->batching().max_batch) : 0.0},
    });
  }

  // Bodies for the errors httplib itself produces (unknown route, payload
  // over the limit, malformed request), which would otherwise be empty.
  httplib::Server::HandlerResponse error_page(const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    switch (response.status) {
      case 404:
        if (route_label(request.path) != "other") {
          answer_error(response, 405, request.method + " " + request.path + ": method not allowed");
        } else {
          answer_error(response, 404,
                       "no route " + request.method + " " + request.path +
                           " (the server answers GET /ping, POST /invocations, GET /metrics)");
        }
        break;
      case 413:
        answer_error(response, 413,
                     "payload larger than the server's limit of " + std::to_string(options.max_payload_bytes) +
                         " bytes (--max-payload-mb)");
        break;
      case 400: answer_error(response, 400, "malformed HTTP request"); break;
      default: answer_error(response, response.status, "HTTP status " + std::to_string(response.status));
    }
    return httplib::Server::HandlerResponse::Handled;
  }

  // Counted before the response is written (httplib's post-routing step), so a client
  // that has its answer finds it in /metrics; the logger runs only after the write.
  void record(const httplib::Request& request, const httplib::Response& response) {
    request_seconds = request_start ? std::chrono::duration<double>(Clock::now() - *request_start).count() : 0.0;
    request_start.reset();
    metrics.record(route_label(request.path), response.status, request_seconds);
  }

  void log(const httplib::Request& request, const httplib::Response& response) {
    if (!options.log_requests) return;
    spdlog::info("{} {} {} {:.1f} ms {} B in {} B out", request.method, request.path, response.status,
                 request_seconds * 1e3, request.body.size(), response.body.size());
  }

  void install_routes() {
    const int threads = options.http_threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    http.set_payload_max_length(options.max_payload_bytes);
    // Clients of an endpoint keep their connection: do not close it every 5 requests.
    http.set_keep_alive_max_count(100000);
    // httplib writes a response's headers and body separately: with Nagle's
    // algorithm the body waits for the client's delayed ACK (40 ms on Linux).
    http.set_tcp_nodelay(true);
    http.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
      request_start = Clock::now();
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http.Get("/ping", [this](const httplib::Request&, httplib::Response& response) {
      // SageMaker only looks at the status; the body stays empty.
      response.status = queue.load() ? 200 : 503;
    });
    http.Post("/invocations",
              [this](const httplib::Request& request, httplib::Response& response) { invocations(request, response); });
    http.Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
      response.set_content(metrics_text(), "text/plain; version=0.0.4");
    });
    // SageMaker batch transform asks for this to size its requests.
    http.Get("/execution-parameters", [this](const httplib::Request&, httplib::Response& response) {
      InferenceQueue* model = queue.load();
      const nlohmann::json body = {
          // What the workers run at once: a batch each.
          {"MaxConcurrentTransforms", model ? model->workers() * model->batching().max_batch : 1},
          {"BatchStrategy", "SINGLE_RECORD"},
          {"MaxPayloadInMB", static_cast<int64_t>(options.max_payload_bytes >> 20)}};
      response.set_content(body.dump(), "application/json");
    });
    http.set_error_handler(
        httplib::Server::HandlerWithResponse([this](const httplib::Request& request, httplib::Response& response) {
          return error_page(request, response);
        }));
    http.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
      std::string what = "internal error";
      try {
        if (error) std::rethrow_exception(error);
      } catch (const std::exception& e) {
        what += std::string(": ") + e.what();
      } catch (...) {}
      answer_error(response, 500, what);
    });
    http.set_post_routing_handler(
        [this](const httplib::Request& request, httplib::Response& response) { record(request, response); });
    http.set_logger(
        [this](const httplib::Request& request, const httplib::Response& response) { log(request, response); });
  }
};

InferenceServer::InferenceServer(ServerOptions options, RequestMetrics& metrics)
    : impl_(std::make_unique<Impl>(std::move(options), metrics)) {
  if (impl_->options.http_threads < 1) throw std::invalid_argument("InferenceServer: http_threads must be positive");
  impl_->install_routes();
}

InferenceServer::~InferenceServer() { stop(); }

int InferenceServer::bind() {
  const std::string& host = impl_->options.host;
  const int port = impl_->options.port;
  const int bound = port == 0 ? impl_->http.bind_to_any_port(host) : (impl_->http.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port) +
                             " (in use, or not an address of this host)");
  }
  return bound;
}

void InferenceServer::serve() { impl_->http.listen_after_bind(); }

void InferenceServer::set_model(InferenceQueue& queue) { impl_->queue.store(&queue); }

void InferenceServer::stop() { impl_->http.stop(); }

}  // namespace dtrain::serving
