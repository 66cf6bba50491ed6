#pragma once

// Request counts and latencies for GET /metrics, in Prometheus' text format:
// a counter per route and status code, and per route a summary whose
// quantiles (0.5, 0.9, 0.99) are taken over the latest `window` requests, so
// that they describe current behaviour rather than the whole uptime.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "concurrency/mutex.h"

namespace dtrain::serving {

struct LatencySummary {
  uint64_t count = 0;  // every request since start
  double sum_seconds = 0;
  // Nearest-rank quantiles over the window; 0 when there was no request.
  double p50 = 0, p90 = 0, p99 = 0;
};

class RequestMetrics {
 public:
  explicit RequestMetrics(size_t window = 4096);

  // `route` is one of the server's paths ("/invocations"); the caller maps
  // anything else to one label ("other") so that clients cannot grow the
  // number of series.
  void record(const std::string& route, int status, double seconds);

  uint64_t count(const std::string& route, int status) const;
  LatencySummary latency(const std::string& route) const;

  // Every series; `gauges` (name, help, value) are appended as gauges.
  std::string prometheus_text(const std::vector<std::tuple<std::string, std::string, double>>& gauges = {}) const;

 private:
  struct RouteLatency {
    uint64_t count = 0;
    double sum = 0;
    std::vector<double> window;  // ring buffer of the latest latencies
    size_t next = 0;
  };
  LatencySummary summarize(const RouteLatency& route) const;

  const size_t window_;
  mutable concurrency::Mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> counts_ DTRAIN_GUARDED_BY(mutex_);
  std::map<std::string, RouteLatency> latencies_ DTRAIN_GUARDED_BY(mutex_);
};

}  // namespace dtrain::serving
