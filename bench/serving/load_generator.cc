// dtrain-serve-load: closed-loop load on POST /invocations of a running
// `dtrain serve`. For each client count, that many connections each send the
// same body back to back for --seconds (after --warmup); reports throughput,
// p50/p99 latency and errors (anything but 200, or no answer):
//
//   dtrain-serve-load --port 8080 --body digit.png --content-type image/png --clients 1,4,16
//   clients  requests  throughput/s  p50 ms  p99 ms  errors
//         1      2950         295.0    3.31    4.12       0
//   ...
// and one JSON line per client count (--json FILE appends them).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string body_file;
  std::string content_type = "application/octet-stream";
  std::vector<int> clients = {1, 4, 16};
  double seconds = 10;
  double warmup = 2;
  std::string label;
  std::string json_file;
};

struct LevelResult {
  size_t requests = 0, errors = 0;
  double seconds = 0, p50 = 0, p99 = 0;
  std::string first_error;
};

double percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

LevelResult run_level(const Options& options, const std::string& body, int clients) {
  std::atomic<bool> measuring{false}, done{false};
  std::mutex mutex;
  LevelResult result;
  std::vector<double> latencies;
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      httplib::Client client(options.host, options.port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);  // no 40 ms Nagle / delayed-ACK stalls
      client.set_read_timeout(60, 0);
      std::vector<double> mine;
      size_t errors = 0;
      std::string first_error;
      while (!done) {
        const auto start = Clock::now();
        const auto answer = client.Post("/invocations", body, options.content_type);
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        if (!measuring) continue;
        mine.push_back(seconds);
        if (!answer || answer->status != 200) {
          ++errors;
          if (first_error.empty()) {
            first_error = answer ? "HTTP " + std::to_string(answer->status) + ": " + answer->body.substr(0, 200)
                                 : "no answer: " + httplib::to_string(answer.error());
          }
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
      result.errors += errors;
      if (result.first_error.empty()) result.first_error = first_error;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(options.warmup));
  const auto start = Clock::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(options.seconds));
  // Requests finishing after this still count: the window ends when the last returns.
  done = true;
  for (std::thread& t : threads) t.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latencies.begin(), latencies.end());
  result.requests = latencies.size();
  result.p50 = percentile(latencies, 0.5);
  result.p99 = percentile(latencies, 0.99);
  return result;
}

int run(const Options& options) {
  std::ifstream in(options.body_file, std::ios::binary);
  if (!in) throw std::runtime_error(options.body_file + ": cannot read the request body");
  std::stringstream text;
  text << in.rdbuf();
  const std::string body = text.str();
  {
    httplib::Client client(options.host, options.port);
    const auto ping = client.Get("/ping");
    if (!ping || ping->status != 200) {
      throw std::runtime_error("the server at " + options.host + ":" + std::to_string(options.port) +
                               " does not answer GET /ping with 200");
    }
  }
  std::printf("%s%zu-byte %s body, %.0f s per level after %.0f s warm-up\n",
              options.label.empty() ? "" : (options.label + ": ").c_str(), body.size(), options.content_type.c_str(),
              options.seconds, options.warmup);
  std::printf("clients  requests  throughput/s   p50 ms   p99 ms  errors\n");
  int status = 0;
  for (int clients : options.clients) {
    const LevelResult r = run_level(options, body, clients);
    const double throughput = static_cast<double>(r.requests) / r.seconds;
    std::printf("%7d  %8zu  %12.1f  %7.2f  %7.2f  %6zu\n", clients, r.requests, throughput, r.p50 * 1e3, r.p99 * 1e3,
                r.errors);
    const nlohmann::json line = {{"label", options.label}, {"clients", clients},       {"requests", r.requests},
                                 {"seconds", r.seconds},   {"throughput", throughput}, {"p50_ms", r.p50 * 1e3},
                                 {"p99_ms", r.p99 * 1e3},  {"errors", r.errors}};
    std::printf("%s\n", line.dump().c_str());
    if (!options.json_file.empty()) std::ofstream(options.json_file, std::ios::app) << line.dump() << "\n";
    if (r.errors > 0) {
      std::fprintf(stderr, "dtrain-serve-load: %zu errors at %d clients; first: %s\n", r.errors, clients,
                   r.first_error.c_str());
      status = 1;
    }
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"dtrain-serve-load: throughput and latency of POST /invocations at several client counts"};
  app.add_option("--host", options.host)->capture_default_str();
  app.add_option("--port", options.port)->required();
  app.add_option("--body", options.body_file, "File sent as every request's body")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--content-type", options.content_type)->capture_default_str();
  app.add_option("--clients", options.clients, "Client counts, one level each")->delimiter(',')->capture_default_str();
  app.add_option("--seconds", options.seconds, "Measured seconds per level")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--warmup", options.warmup, "Unmeasured seconds before each level")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  app.add_option("--label", options.label, "Name for the printed and JSON results");
  app.add_option("--json", options.json_file, "Append one JSON line per level to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-serve-load: %s\n", e.what());
    return 1;
  }
}
