#include "serving/request_metrics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace dtrain::serving {
namespace {

// Nearest rank: the smallest value with at least q of the sample at or below it.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

RequestMetrics::RequestMetrics(size_t window) : window_(window) {
  if (window == 0) throw std::invalid_argument("RequestMetrics: the latency window must hold at least one request");
}

void RequestMetrics::record(const std::string& route, int status, double seconds) {
  concurrency::MutexLock lock(mutex_);
  ++counts_[{route, status}];
  RouteLatency& latency = latencies_[route];
  ++latency.count;
  latency.sum += seconds;
  if (latency.window.size() < window_) {
    latency.window.push_back(seconds);
  } else {
    latency.window[latency.next] = seconds;
    latency.next = (latency.next + 1) % window_;
  }
}

uint64_t RequestMetrics::count(const std::string& route, int status) const {
  concurrency::MutexLock lock(mutex_);
  const auto it = counts_.find({route, status});
  return it == counts_.end() ? 0 : it->second;
}

LatencySummary RequestMetrics::summarize(const RouteLatency& route) const {
  std::vector<double> sorted = route.window;
  std::sort(sorted.begin(), sorted.end());
  return {route.count, route.sum, quantile(sorted, 0.5), quantile(sorted, 0.9), quantile(sorted, 0.99)};
}

LatencySummary RequestMetrics::latency(const std::string& route) const {
  concurrency::MutexLock lock(mutex_);
  const auto it = latencies_.find(route);
  return it == latencies_.end() ? LatencySummary{} : summarize(it->second);
}

std::string RequestMetrics::prometheus_text(
    const std::vector<std::tuple<std::string, std::string, double>>& gauges) const {
  concurrency::MutexLock lock(mutex_);
  std::string out;
  out += "# HELP dtrain_serve_requests_total Requests answered, by route and HTTP status code.\n";
  out += "# TYPE dtrain_serve_requests_total counter\n";
  for (const auto& [key, count] : counts_) {
    out += fmt::format("dtrain_serve_requests_total{{route=\"{}\",code=\"{}\"}} {}\n", key.first, key.second, count);
  }
  out += fmt::format(
      "# HELP dtrain_serve_request_duration_seconds Time from a request's headers to its response; quantiles over "
      "the latest {} requests of the route.\n",
      window_);
  out += "# TYPE dtrain_serve_request_duration_seconds summary\n";
  for (const auto& [route, latency] : latencies_) {
    const LatencySummary s = summarize(latency);
    for (const auto& [q, value] : {std::pair{"0.5", s.p50}, std::pair{"0.9", s.p90}, std::pair{"0.99", s.p99}}) {
      out += fmt::format("dtrain_serve_request_duration_seconds{{route=\"{}\",quantile=\"{}\"}} {:.6f}\n", route, q,
                         value);
    }
    out += fmt::format("dtrain_serve_request_duration_seconds_sum{{route=\"{}\"}} {:.6f}\n", route, s.sum_seconds);
    out += fmt::format("dtrain_serve_request_duration_seconds_count{{route=\"{}\"}} {}\n", route, s.count);
  }
  for (const auto& [name, help, value] : gauges) {
    out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, value);
  }
  return out;
}

}  // namespace dtrain::serving
