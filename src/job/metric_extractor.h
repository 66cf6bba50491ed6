#pragma once

#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/job_spec.h"

namespace dtrain::job {

// One value a metric definition found in an output line.
struct MetricSample {
  double time = 0;  // seconds since the epoch
  std::string host;
  std::optional<int> rank;
  std::string name;
  double value = 0;

  nlohmann::ordered_json to_json() const;  // {time, host, rank, name, value}
};

// An output line split into who wrote it and what: "[algo-2:1]<stdout>:loss 0.5"
// is host algo-2, rank 1, text "loss 0.5"; a line without the launcher's tag
// belongs to `default_host` with no rank.
struct TaggedLine {
  std::string host;
  std::optional<int> rank;
  std::string_view text;
};
TaggedLine parse_tagged_line(std::string_view line, const std::string& default_host);

// Runs the job's metric_definitions over output lines, as SageMaker does
// over a training job's logs: for every definition whose regex matches
// (search, not full match), the first capture group is the value.
class MetricExtractor {
 public:
  explicit MetricExtractor(const std::vector<MetricDefinition>& definitions);

  std::vector<MetricSample> extract(std::string_view text, const std::string& host, std::optional<int> rank,
                                    double time) const;

  bool empty() const { return metrics_.empty(); }

 private:
  struct Compiled {
    std::string name;
    std::regex regex;
  };
  std::vector<Compiled> metrics_;
};

}  // namespace dtrain::job
