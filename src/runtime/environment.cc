#include "runtime/environment.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "dtrain/dtrain.h"
#include "slurm/slurm_step.h"

namespace dtrain::runtime {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

template <typename T>
T number(const char* name, T fallback) {
  const char* value = env(name);
  if (!value) return fallback;
  T parsed{};
  const char* end = value + std::char_traits<char>::length(value);
  auto [ptr, ec] = std::from_chars(value, end, parsed);
  if (ec != std::errc() || ptr != end) {
    throw Error(std::string("dtrain: environment variable ") + name + "='" + value + "' is not a valid number");
  }
  return parsed;
}

std::string text(const char* name, std::string fallback = {}) {
  const char* value = env(name);
  return value ? value : fallback;
}

void require(bool condition, const std::string& message) {
  if (!condition) throw Error("dtrain: " + message);
}

// The world as dtrain run (DTRAIN_*) or a bare mpirun (OMPI_COMM_WORLD_*) describes it.
void read_launcher_world(RuntimeConfig& c) {
  const char* size_var = c.launched_by_mpirun ? "OMPI_COMM_WORLD_SIZE" : "DTRAIN_SIZE";
  const char* rank_var = c.launched_by_mpirun ? "OMPI_COMM_WORLD_RANK" : "DTRAIN_RANK";
  c.size = number<int>(size_var, 1);
  c.rank = number<int>(rank_var, 0);
  require(c.size >= 1, std::string(size_var) + " must be at least 1, got " + std::to_string(c.size));
  require(c.rank >= 0 && c.rank < c.size, std::string(rank_var) + "=" + std::to_string(c.rank) + " is outside 0.." +
                                              std::to_string(c.size - 1) + " (" + size_var + "=" +
                                              std::to_string(c.size) + ")");
  c.local_size = number<int>(c.launched_by_mpirun ? "OMPI_COMM_WORLD_LOCAL_SIZE" : "DTRAIN_LOCAL_SIZE", c.size);
  c.local_rank = number<int>(c.launched_by_mpirun ? "OMPI_COMM_WORLD_LOCAL_RANK" : "DTRAIN_LOCAL_RANK", c.rank);
  c.cross_size = number<int>("DTRAIN_CROSS_SIZE", 1);
  c.cross_rank = number<int>("DTRAIN_CROSS_RANK", 0);
  require(c.local_rank >= 0 && c.local_rank < c.local_size,
          "DTRAIN_LOCAL_RANK=" + std::to_string(c.local_rank) + " is outside 0.." + std::to_string(c.local_size - 1));
  require(c.cross_rank >= 0 && c.cross_rank < c.cross_size,
          "DTRAIN_CROSS_RANK=" + std::to_string(c.cross_rank) + " is outside 0.." + std::to_string(c.cross_size - 1));
  c.rendezvous_addr = text("DTRAIN_RENDEZVOUS_ADDR");
  c.rendezvous_port = number<int>("DTRAIN_RENDEZVOUS_PORT", 0);
  c.job_token = text("DTRAIN_JOB_TOKEN");
  c.job_id = text("DTRAIN_JOB_ID", "job");
  if (c.size > 1 && !c.launched_by_mpirun) {
    require(!c.rendezvous_addr.empty() && c.rendezvous_port > 0,
            "DTRAIN_SIZE=" + std::to_string(c.size) +
                " but DTRAIN_RENDEZVOUS_ADDR/DTRAIN_RENDEZVOUS_PORT are not set; start workers with `dtrain run`");
    require(!c.job_token.empty(), "DTRAIN_JOB_TOKEN is not set; start workers with `dtrain run`");
  }
}

// The world of a Slurm job step: ranks from srun, the store from `dtrain run --slurm`
// (DTRAIN_RENDEZVOUS_*) or, under a bare srun, served by rank 0 on the step's first node.
void read_slurm_world(RuntimeConfig& c, const slurm::SlurmStep& step) {
  c.launched_by_slurm = true;
  c.rank = step.rank;
  c.size = step.size;
  c.local_rank = step.local_rank;
  c.local_size = step.local_size;
  c.cross_rank = step.node_index;
  c.cross_size = step.node_count();
  const std::string step_name = step.job_id + "." + step.step_id;
  c.job_id = text("DTRAIN_JOB_ID", "slurm-" + step_name);
  c.rendezvous_addr = text("DTRAIN_RENDEZVOUS_ADDR");
  if (c.rendezvous_addr.empty()) {
    c.rendezvous_addr = step.first_node();
    c.rendezvous_in_step = true;
    c.rendezvous_port =
        number<int>("DTRAIN_RENDEZVOUS_PORT", slurm::derived_rendezvous_port(step.job_id, step.step_id));
  } else {
    c.rendezvous_port = number<int>("DTRAIN_RENDEZVOUS_PORT", 0);
    require(c.rendezvous_port > 0, "DTRAIN_RENDEZVOUS_ADDR is set but DTRAIN_RENDEZVOUS_PORT is not");
  }
  require(c.rendezvous_port > 0 && c.rendezvous_port < 65536,
          "DTRAIN_RENDEZVOUS_PORT=" + std::to_string(c.rendezvous_port) + " is not a port");
  c.job_token = text("DTRAIN_JOB_TOKEN");
  if (c.job_token.empty()) {
    c.job_token = "slurm-" + step_name + "-uid" + std::to_string(::getuid());
    c.job_token_derived = true;
  }
}

}  // namespace

RuntimeConfig read_config_from_environment() {
  RuntimeConfig c;
  // dtrain run sets DTRAIN_SIZE and wins; a worker started by a bare mpirun takes its world
  // from Open MPI's variables, a task of a bare srun from Slurm's.
  c.launched_by_mpirun = !env("DTRAIN_SIZE") && env("OMPI_COMM_WORLD_SIZE");
  std::optional<slurm::SlurmStep> step;
  if (!env("DTRAIN_SIZE") && !c.launched_by_mpirun) {
    try {
      step = slurm::slurm_step_from_environment([](const char* name) { return std::getenv(name); });
    } catch (const slurm::SlurmError& e) {
      throw Error(std::string("dtrain: ") + e.what());
    }
  }
  if (step) {
    read_slurm_world(c, *step);
  } else {
    read_launcher_world(c);
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  c.hostname = text("DTRAIN_HOSTNAME", host);
  c.iface = text("DTRAIN_IFACE");
  c.elastic_worker = number<int>("DTRAIN_ELASTIC_WORKER", -1);
  require(c.elastic_worker >= -1, "DTRAIN_ELASTIC_WORKER must be a worker number >= 0");
  if (c.elastic_worker >= 0) {
    require(!c.rendezvous_addr.empty() && c.rendezvous_port > 0 && !c.job_token.empty(),
            "DTRAIN_ELASTIC_WORKER is set but the rendezvous store is not (DTRAIN_RENDEZVOUS_ADDR, "
            "DTRAIN_RENDEZVOUS_PORT, DTRAIN_JOB_TOKEN); start elastic workers with `dtrain run --min-np`");
  }

  const auto threshold = number<long long>("DTRAIN_FUSION_THRESHOLD", 64LL * 1024 * 1024);
  require(threshold >= 0, "DTRAIN_FUSION_THRESHOLD must be >= 0 bytes");
  c.fusion_threshold_bytes = static_cast<std::size_t>(threshold);
  c.cycle_time_ms = number<double>("DTRAIN_CYCLE_TIME_MS", 1.0);
  require(c.cycle_time_ms >= 0, "DTRAIN_CYCLE_TIME_MS must be >= 0");
  const auto capacity = number<long long>("DTRAIN_CACHE_CAPACITY", 1024);
  require(capacity >= 0, "DTRAIN_CACHE_CAPACITY must be >= 0");
  c.cache_capacity = static_cast<std::size_t>(capacity);
  c.stall_warning_s = number<double>("DTRAIN_STALL_WARNING_S", 60);
  c.stall_shutdown_s = number<double>("DTRAIN_STALL_SHUTDOWN_S", 0);
  c.timeline_path = text("DTRAIN_TIMELINE");
  const auto recorded = number<long long>("DTRAIN_FLIGHT_RECORDER_ENTRIES", 1024);
  require(recorded >= 0 && recorded <= 1'000'000, "DTRAIN_FLIGHT_RECORDER_ENTRIES must be 0 (off) to 1000000");
  c.flight_recorder_entries = static_cast<std::size_t>(recorded);
  c.flight_recorder_dir = text("DTRAIN_FLIGHT_RECORDER_DIR");
  c.timeline_mark_cycles = number<int>("DTRAIN_TIMELINE_MARK_CYCLES", 0) != 0;
  c.shared_memory = number<int>("DTRAIN_SHM", 1) != 0;
  c.tcp_mesh = number<int>("DTRAIN_TCP_MESH", 1) != 0;
  const auto mesh_bytes = number<long long>("DTRAIN_TCP_MESH_BYTES", static_cast<long long>(c.tcp_mesh_bytes));
  require(mesh_bytes >= 0, "DTRAIN_TCP_MESH_BYTES must be >= 0 bytes");
  c.tcp_mesh_bytes = static_cast<std::size_t>(mesh_bytes);
  const auto rider_bytes =
      number<long long>("DTRAIN_SUMMARY_RIDER_BYTES", static_cast<long long>(c.summary_rider_bytes));
  require(rider_bytes >= 0, "DTRAIN_SUMMARY_RIDER_BYTES must be >= 0 bytes");
  c.summary_rider_bytes = static_cast<std::size_t>(rider_bytes);
  c.hierarchical = number<int>("DTRAIN_HIERARCHICAL_ALLREDUCE", -1);
  require(c.hierarchical >= -1 && c.hierarchical <= 1, "DTRAIN_HIERARCHICAL_ALLREDUCE must be 0 or 1");
  c.gpu_engine = text("DTRAIN_GPU_ENGINE", "auto");
  require(c.gpu_engine == "auto" || c.gpu_engine == "nccl" || c.gpu_engine == "staged",
          "DTRAIN_GPU_ENGINE must be auto, nccl or staged (got '" + c.gpu_engine + "')");
  c.autotune = number<int>("DTRAIN_AUTOTUNE", 0) != 0;
  c.autotune_log = text("DTRAIN_AUTOTUNE_LOG");
  c.autotune_warmup_samples = number<int>("DTRAIN_AUTOTUNE_WARMUP_SAMPLES", 3);
  require(c.autotune_warmup_samples >= 0, "DTRAIN_AUTOTUNE_WARMUP_SAMPLES must be >= 0");
  c.autotune_steps_per_sample = number<int>("DTRAIN_AUTOTUNE_STEPS_PER_SAMPLE", 5);
  require(c.autotune_steps_per_sample >= 1, "DTRAIN_AUTOTUNE_STEPS_PER_SAMPLE must be >= 1");
  c.background_nice = number<int>("DTRAIN_BACKGROUND_NICE", -1);
  require(!env("DTRAIN_BACKGROUND_NICE") || (c.background_nice >= 0 && c.background_nice <= 19),
          "DTRAIN_BACKGROUND_NICE must be a nice value from 0 to 19 (got " + text("DTRAIN_BACKGROUND_NICE") + ")");
  const double timeout_s = number<double>("DTRAIN_TIMEOUT_S", 300);
  require(std::isfinite(timeout_s) && timeout_s > 0,
          "DTRAIN_TIMEOUT_S must be a number of seconds above 0 (got " + text("DTRAIN_TIMEOUT_S") + ")");
  c.timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  // spdlog reads an unknown level name as "off": a typo would silence every warning.
  const std::string level = text("DTRAIN_LOG_LEVEL", "warn");
  require(level == "trace" || level == "debug" || level == "info" || level == "warn" || level == "warning" ||
              level == "error" || level == "err" || level == "critical" || level == "off",
          "DTRAIN_LOG_LEVEL must be trace, debug, info, warn, error, critical or off (got '" + level + "')");
  return c;
}

}  // namespace dtrain::runtime
