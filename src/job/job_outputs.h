// Where a job's results go (output_path/<name>/) and what records them while its hosts run:
// every host's output to the console and logs/<host>.log, metric samples to metrics.jsonl
// (status.json, the job's live state, is job_status.h's).
// Shared by the local runner and the Slurm runner.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "job/job_spec.h"
#include "job/metric_extractor.h"

namespace dtrain::job {

// The job's output directory: artifacts, logs, metrics and summary.
struct JobOutputs {
  explicit JobOutputs(const JobSpec& spec);

  // Removes what an earlier run of the same job left and creates logs/; throws JobError.
  void reset() const;

  std::string dir, logs_dir, metrics_file, summary_file, status_file, model_archive, output_archive;
  std::string ranks_file;  // the master's launcher writes it (launch/rank_status_file.h)
};

// Everything the relay learns while the hosts run.
class JobRecorder {
 public:
  JobRecorder(const JobSpec& spec, const JobOutputs& outputs, const std::vector<std::string>& host_names);

  // One line of `host`'s output: `prefixed` goes to the console as it is; the text after
  // `prefix` to the host's log and to the metric extractor.
  void line(const std::string& host, std::string_view prefix, bool is_stderr, std::string_view prefixed);

  const std::map<std::string, double>& final_metrics() const { return final_; }
  size_t samples() const { return samples_; }

 private:
  MetricExtractor extractor_;
  std::ofstream metrics_;
  std::map<std::string, std::unique_ptr<std::ofstream>> logs_;
  std::map<std::string, double> final_;
  size_t samples_ = 0;
};

}  // namespace dtrain::job
