// Counts and latency quantiles, and the Prometheus text format that scrapers parse.
#include "serving/request_metrics.h"

#include <gtest/gtest.h>

namespace dtrain::serving {
namespace {

TEST(RequestMetrics, CountsByRouteAndStatus) {
  RequestMetrics metrics;
  metrics.record("/invocations", 200, 0.01);
  metrics.record("/invocations", 200, 0.02);
  metrics.record("/invocations", 415, 0.001);
  metrics.record("/ping", 200, 0.0001);
  EXPECT_EQ(metrics.count("/invocations", 200), 2u);
  EXPECT_EQ(metrics.count("/invocations", 415), 1u);
  EXPECT_EQ(metrics.count("/ping", 503), 0u);
  EXPECT_EQ(metrics.latency("/invocations").count, 3u);
  EXPECT_NEAR(metrics.latency("/invocations").sum_seconds, 0.031, 1e-12);
}

TEST(RequestMetrics, NearestRankQuantilesOverTheLatestWindow) {
  RequestMetrics metrics(100);
  for (int i = 1; i <= 100; ++i) metrics.record("/invocations", 200, i / 1000.0);
  LatencySummary s = metrics.latency("/invocations");
  EXPECT_DOUBLE_EQ(s.p50, 0.050);
  EXPECT_DOUBLE_EQ(s.p90, 0.090);
  EXPECT_DOUBLE_EQ(s.p99, 0.099);
  // 100 slow requests push the fast ones out of the window; the count keeps all.
  for (int i = 0; i < 100; ++i) metrics.record("/invocations", 200, 2.0);
  s = metrics.latency("/invocations");
  EXPECT_DOUBLE_EQ(s.p50, 2.0);
  EXPECT_EQ(s.count, 200u);
}

TEST(RequestMetrics, PrometheusTextFormat) {
  RequestMetrics metrics;
  metrics.record("/invocations", 200, 0.25);
  metrics.record("/invocations", 400, 0.5);
  const std::string text = metrics.prometheus_text({{"dtrain_serve_workers", "Workers.", 2}});
  EXPECT_NE(text.find("# TYPE dtrain_serve_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("dtrain_serve_requests_total{route=\"/invocations\",code=\"200\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("dtrain_serve_requests_total{route=\"/invocations\",code=\"400\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE dtrain_serve_request_duration_seconds summary\n"), std::string::npos);
  EXPECT_NE(text.find("dtrain_serve_request_duration_seconds{route=\"/invocations\",quantile=\"0.5\"} 0.250000\n"),
            std::string::npos);
  EXPECT_NE(text.find("dtrain_serve_request_duration_seconds{route=\"/invocations\",quantile=\"0.99\"} 0.500000\n"),
            std::string::npos);
  EXPECT_NE(text.find("dtrain_serve_request_duration_seconds_sum{route=\"/invocations\"} 0.750000\n"),
            std::string::npos);
  EXPECT_NE(text.find("dtrain_serve_request_duration_seconds_count{route=\"/invocations\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE dtrain_serve_workers gauge\ndtrain_serve_workers 2\n"), std::string::npos);
  // Every line is a comment or "name{labels} value".
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "the text must end with a newline";
    const std::string line = text.substr(start, end - start);
    EXPECT_TRUE(line.starts_with("# ") || line.find(' ') != std::string::npos) << line;
    start = end + 1;
  }
}

}  // namespace
}  // namespace dtrain::serving
