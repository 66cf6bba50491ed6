#include "job/metric_extractor.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace dtrain::job {

nlohmann::ordered_json MetricSample::to_json() const {
  nlohmann::ordered_json j;
  j["time"] = time;
  j["host"] = host;
  j["rank"] = rank ? nlohmann::ordered_json(*rank) : nlohmann::ordered_json(nullptr);
  j["name"] = name;
  j["value"] = value;
  return j;
}

TaggedLine parse_tagged_line(std::string_view line, const std::string& default_host) {
  TaggedLine tagged{default_host, std::nullopt, line};
  // "[" host ":" rank "]<" stream ">:" text
  if (line.empty() || line[0] != '[') return tagged;
  size_t close = line.find("]<");
  if (close == std::string_view::npos) return tagged;
  size_t stream_end = line.find(">:", close);
  if (stream_end == std::string_view::npos) return tagged;
  std::string_view inside = line.substr(1, close - 1);
  size_t colon = inside.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return tagged;
  int rank = 0;
  std::string_view digits = inside.substr(colon + 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (ec != std::errc() || ptr != digits.data() + digits.size()) return tagged;
  tagged.host = std::string(inside.substr(0, colon));
  tagged.rank = rank;
  tagged.text = line.substr(stream_end + 2);
  return tagged;
}

MetricExtractor::MetricExtractor(const std::vector<MetricDefinition>& definitions) {
  for (const auto& d : definitions) {
    metrics_.push_back({d.name, std::regex(d.regex, std::regex::ECMAScript | std::regex::optimize)});
  }
}

std::vector<MetricSample> MetricExtractor::extract(std::string_view text, const std::string& host,
                                                   std::optional<int> rank, double time) const {
  std::vector<MetricSample> samples;
  if (metrics_.empty()) return samples;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  for (const auto& m : metrics_) {
    std::match_results<std::string_view::const_iterator> match;
    if (!std::regex_search(text.begin(), text.end(), match, m.regex) || match.size() < 2 || !match[1].matched) {
      continue;
    }
    std::string captured = match[1].str();
    char* end = nullptr;
    double value = std::strtod(captured.c_str(), &end);
    if (captured.empty() || end != captured.c_str() + captured.size() || !std::isfinite(value)) {
      continue;
    }
    samples.push_back(MetricSample{time, host, rank, m.name, value});
  }
  return samples;
}

}  // namespace dtrain::job
