// dtrain-serve: a model trained by a dtrain job behind SageMaker's inference
// container contract (GET /ping, POST /invocations, port 8080), plus GET
// /metrics. `dtrain serve ...` runs this program with the same arguments; the
// serving image runs `dtrain serve` with the model SageMaker unpacked into
// /opt/ml/model. Usage and endpoints: docs/serving.md.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "apps/serve/libtorch_threads.h"
#include "apps/serve/maskrcnn_endpoint.h"
#include "apps/serve/mnist_endpoint.h"
#include "serving/inference_server.h"
#include "serving/model_error.h"
#include "serving/model_location.h"
#include "serving/model_metadata.h"
#include "settings/env_setting.h"
#include "vision/inference/predictor.h"

namespace {

namespace serving = dtrain::serving;

struct Options {
  std::string model;
  std::string host = "0.0.0.0";
  int port = 8080;
  int workers = 1;
  int threads = 0;  // LibTorch intra-op threads; 0: the cores shared among the workers
  int queue_size = 32;
  std::string device = "cpu";
  int max_batch = 1;         // requests one worker runs as one batch
  int batch_timeout_ms = 0;  // how long a worker may wait to fill a batch
  double max_payload_mb = 6;
  uint64_t max_image_pixels = uint64_t{2048} * 2048;
  bool quiet = false;
};

std::string default_model_path() {
  // SageMaker unpacks the model into /opt/ml/model; a job's SM_MODEL_DIR names it too.
  if (const char* dir = std::getenv("SM_MODEL_DIR"); dir && *dir) return dir;
  return "/opt/ml/model";
}

int default_port() {
  // SageMaker's multi-container endpoints tell each container its port.
  return dtrain::settings::env_port("SAGEMAKER_BIND_TO_PORT").value_or(8080);
}

std::vector<std::unique_ptr<serving::Endpoint>> load_endpoints(const serving::ModelMetadata& model,
                                                               const Options& options, int threads) {
  std::vector<std::unique_ptr<serving::Endpoint>> endpoints;
  // One copy of the model per worker, built one after the other (the
  // LibTorch settings they make are process-wide).
  for (int i = 0; i < options.workers; ++i) {
    if (model.kind == serving::ModelKind::kMnist) {
      endpoints.push_back(dtrain::serve::make_mnist_endpoint(model, options.device));
    } else {
      endpoints.push_back(
          dtrain::serve::make_maskrcnn_endpoint(model, threads, options.max_image_pixels, options.device));
    }
  }
  return endpoints;
}

// SIGTERM and SIGINT reach a thread through a pipe. Blocking them in main for
// sigwait did not work: a thread some library starts before main runs took
// the signal and the process died of it. A handler works on whatever thread
// the kernel picks, and write() is async-signal-safe.
int signal_pipe[2] = {-1, -1};

extern "C" void forward_signal(int signal) {
  const char number = static_cast<char>(signal);
  const ssize_t written = write(signal_pipe[1], &number, 1);
  (void)written;  // a full pipe already holds a signal to act on
}

void install_signal_forwarding() {
  if (pipe2(signal_pipe, O_CLOEXEC) != 0) throw std::runtime_error("cannot create the signal pipe");
  struct sigaction action {};
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

// The signal number, or 0 when woken by the program itself.
int wait_for_signal() {
  char number = 0;
  while (read(signal_pipe[0], &number, 1) < 0 && errno == EINTR) {}
  return number;
}

int serve(const Options& options) {
  install_signal_forwarding();

  serving::ArchiveLimits limits;
  const serving::ModelLocation location(options.model, limits);
  const serving::ModelMetadata model = serving::read_model_metadata(location.directory());
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = options.threads > 0 ? options.threads : std::max(1, cores / options.workers);
  spdlog::info("model: {} ({}{}), {} worker(s) x {} LibTorch thread(s) on {}, batches of up to {}", options.model,
               serving::kind_name(model.kind),
               location.unpacked() ? ", unpacked into " + location.directory().string() : std::string(),
               options.workers, threads, options.device, options.max_batch);

  serving::RequestMetrics metrics;
  serving::ServerOptions server_options;
  server_options.host = options.host;
  server_options.port = options.port;
  server_options.max_payload_bytes = static_cast<size_t>(options.max_payload_mb * 1024 * 1024);
  // One connection per request running (a batch per worker) or waiting, and some to spare.
  server_options.http_threads = options.workers * options.max_batch + options.queue_size + 16;
  server_options.log_requests = !options.quiet;
  serving::InferenceServer server(server_options, metrics);
  const int port = server.bind();
  // Tests and scripts read the port from this line (with --port 0).
  spdlog::info("listening on {}:{} (GET /ping answers 503 until the model is loaded)", options.host, port);

  std::atomic<bool> stopping{false}, served{false};
  std::thread signal_waiter([&] {
    const int signal = wait_for_signal();
    if (signal != 0 && !stopping.exchange(true)) {
      spdlog::info("{}: finishing the requests in flight, then exiting", signal == SIGTERM ? "SIGTERM" : "SIGINT");
    }
    // stop() is a no-op until serve() has started listening: repeat until it ends.
    while (!served) {
      server.stop();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::thread http([&] {
    server.serve();
    served = true;
  });
  const auto finish = [&] {
    // Wakes the signal thread when nobody sent a signal.
    if (!stopping.exchange(true)) forward_signal(0);
    signal_waiter.join();
    http.join();
  };

  std::unique_ptr<serving::InferenceQueue> queue;
  try {
    dtrain::serve::use_libtorch_threads(threads);
    serving::BatchOptions batching;
    batching.max_batch = static_cast<size_t>(options.max_batch);
    batching.batch_timeout = std::chrono::milliseconds(options.batch_timeout_ms);
    queue = std::make_unique<serving::InferenceQueue>(load_endpoints(model, options, threads),
                                                      static_cast<size_t>(options.queue_size), batching);
  } catch (...) {
    finish();
    throw;
  }
  server.set_model(*queue);
  spdlog::info("model loaded: /ping answers 200");
  http.join();  // serve() returns after stop() once requests in flight are answered
  signal_waiter.join();
  queue->shutdown();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  options.model = default_model_path();
  try {
    options.port = default_port();
  } catch (const dtrain::settings::SettingError& e) {
    std::fprintf(stderr, "dtrain serve: %s\n", e.what());
    return 2;
  }
  CLI::App app{
      "dtrain serve: a model from a dtrain job behind SageMaker's inference contract "
      "(GET /ping, POST /invocations, GET /metrics)",
      "dtrain serve"};
  // SageMaker starts hosting containers as `<image> serve`; accept the word.
  std::string verb;
  app.add_option("verb", verb, "optional 'serve' (how SageMaker starts the container)")
      ->check(CLI::IsMember({"serve"}));
  app.add_option("--model", options.model,
                 "model.tar.gz from a dtrain job, or its unpacked directory (default: $SM_MODEL_DIR or /opt/ml/model)")
      ->capture_default_str();
  app.add_option("--host", options.host, "Address to listen on")->capture_default_str();
  app.add_option("--port", options.port, "Port (0: any free port, printed at start)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--workers", options.workers, "Inference workers, each with its own copy of the model")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--threads", options.threads, "LibTorch threads per worker (0: cores / workers)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--queue-size", options.queue_size, "Requests that may wait for a worker; more get 503")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--device", options.device,
                 "Where the models run: cpu, or cuda (the first GPU; needs a LibTorch with CUDA)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--max-batch", options.max_batch,
                 "Requests a worker runs as one batch, taken from those waiting (Mask R-CNN: one model batch)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--batch-timeout-ms", options.batch_timeout_ms,
                 "With --max-batch > 1: how long a worker may wait for more requests (0: only those already waiting)")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("--max-payload-mb", options.max_payload_mb, "Largest request body in MiB; larger ones get 413")
      ->check(CLI::Range(0.001, 1024.0))
      ->capture_default_str();
  app.add_option("--max-image-pixels", options.max_image_pixels,
                 "Mask R-CNN: largest image (width x height) accepted; larger ones get 413")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30))
      ->capture_default_str();
  app.add_flag("--quiet", options.quiet, "No log line per request");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "dtrain serve: %s\n", e.what());
    return 2;
  }
  try {
    // Before anything is loaded: a GPU that is not there is a usage error.
    dtrain::vision::inference::check_device(options.device);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "dtrain serve: --device %s\n", e.what());
    return 2;
  }
  // Logs on stderr: stdout stays free for whatever a wrapper wants to print.
  spdlog::set_default_logger(spdlog::stderr_color_mt("dtrain-serve"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%eZ dtrain-serve %l: %v", spdlog::pattern_time_type::utc);
  try {
    return serve(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain serve: %s\n", e.what());
    return 1;
  }
}
