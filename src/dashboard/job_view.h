// What the dashboard says about one job, from whatever of its files can be read: summary.json
// once the job ended, status.json while it runs (a runner that died without a summary makes
// the job Interrupted), metrics.jsonl and logs/ as far as they are complete. A missing,
// half-written or malformed file leaves its fields null; it never makes the job an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "dashboard/job_catalog.h"

namespace dtrain::dashboard {

// The jobs page's row: id, name, status, failure_reason, instance_count, processes_per_host,
// engine, backend, started_at, duration_s, final_metrics.
nlohmann::ordered_json job_summary(const JobLocation& job);

// The row plus hosts (state, exit code or signal, reason, ranks, staging), artifacts, the
// TensorBoard directory, timelines, log hosts and metric names.
nlohmann::ordered_json job_detail(const JobLocation& job);

// Metric samples from byte `from` of metrics.jsonl: {"samples": [...], "next": offset,
// "started_at": ...}; each sample's time in seconds since the job started (since the first
// sample when the start is unknown).
nlohmann::ordered_json metric_samples(const JobLocation& job, uint64_t from);

// Whole lines of logs/<host>.log from `from` (the tail without it).
nlohmann::ordered_json log_lines(const JobLocation& job, const std::string& host, std::optional<uint64_t> from);

}  // namespace dtrain::dashboard
