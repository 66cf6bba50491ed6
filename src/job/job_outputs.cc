#include "job/job_outputs.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "job/job_error.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

JobOutputs::JobOutputs(const JobSpec& spec)
    : dir(spec.output_path + "/" + spec.name),
      logs_dir(dir + "/logs"),
      metrics_file(dir + "/metrics.jsonl"),
      summary_file(dir + "/summary.json"),
      status_file(dir + "/status.json"),
      model_archive(dir + "/model.tar.gz"),
      output_archive(dir + "/output.tar.gz"),
      ranks_file(dir + "/ranks.json") {}

void JobOutputs::reset() const {
  std::error_code ec;
  for (const auto& f : {metrics_file, summary_file, status_file, ranks_file, model_archive, output_archive})
    fs::remove(f, ec);
  fs::remove_all(logs_dir, ec);
  fs::create_directories(logs_dir, ec);
  if (ec) throw JobError::runtime(fmt::format("cannot create {}: {}", logs_dir, ec.message()));
}

JobRecorder::JobRecorder(const JobSpec& spec, const JobOutputs& outputs, const std::vector<std::string>& host_names)
    : extractor_(spec.metric_definitions), metrics_(outputs.metrics_file, std::ios::app) {
  for (const auto& name : host_names) {
    logs_[name] = std::make_unique<std::ofstream>(outputs.logs_dir + "/" + name + ".log");
  }
}

void JobRecorder::line(const std::string& host, std::string_view prefix, bool is_stderr, std::string_view prefixed) {
  write_all(is_stderr ? 2 : 1, prefixed);
  std::string_view text = prefixed.substr(std::min(prefix.size(), prefixed.size()));
  if (auto it = logs_.find(host); it != logs_.end()) {
    it->second->write(text.data(), static_cast<std::streamsize>(text.size()));
    it->second->flush();
  }
  if (extractor_.empty()) return;
  TaggedLine tagged = parse_tagged_line(text, host);
  for (const auto& sample : extractor_.extract(tagged.text, tagged.host, tagged.rank, unix_time())) {
    metrics_ << sample.to_json().dump() << '\n';
    metrics_.flush();
    final_[sample.name] = sample.value;
    ++samples_;
  }
}

}  // namespace dtrain::job
