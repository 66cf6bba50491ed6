#include "slurm/slurm_step.h"

#include <charconv>
#include <cstdint>

#include <fmt/format.h>

#include "slurm/hostlist.h"

namespace dtrain::slurm {
namespace {

std::string required(const EnvironmentReader& read, const char* name) {
  const char* value = read(name);
  if (!value || !*value) throw SlurmError(fmt::format("{} is not set inside the Slurm job step", name));
  return value;
}

int whole_number(const EnvironmentReader& read, const char* name, int minimum) {
  const std::string text = required(read, name);
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < minimum) {
    throw SlurmError(fmt::format("{}='{}' is not a whole number >= {}", name, text, minimum));
  }
  return value;
}

std::uint64_t mix(std::uint64_t h, const std::string& text) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;  // FNV-1a
  return h;
}

}  // namespace

std::optional<SlurmStep> slurm_step_from_environment(const EnvironmentReader& read) {
  const char* step_tasks = read("SLURM_STEP_NUM_TASKS");
  if (!step_tasks || !*step_tasks) return std::nullopt;
  SlurmStep step;
  step.size = whole_number(read, "SLURM_STEP_NUM_TASKS", 1);
  step.rank = whole_number(read, "SLURM_PROCID", 0);
  step.local_rank = whole_number(read, "SLURM_LOCALID", 0);
  step.node_index = whole_number(read, "SLURM_NODEID", 0);
  step.job_id = required(read, "SLURM_JOB_ID");
  step.step_id = required(read, "SLURM_STEP_ID");
  try {
    step.nodes = expand_hostlist(required(read, "SLURM_STEP_NODELIST"));
  } catch (const SlurmError& e) {
    throw SlurmError(fmt::format("SLURM_STEP_NODELIST: {}", e.what()));
  }
  std::vector<int> per_node;
  try {
    per_node = expand_tasks_per_node(required(read, "SLURM_STEP_TASKS_PER_NODE"));
  } catch (const SlurmError& e) {
    throw SlurmError(fmt::format("SLURM_STEP_TASKS_PER_NODE: {}", e.what()));
  }

  if (step.rank >= step.size) {
    throw SlurmError(
        fmt::format("SLURM_PROCID={} is outside 0..{} (SLURM_STEP_NUM_TASKS={})", step.rank, step.size - 1, step.size));
  }
  if (per_node.size() != step.nodes.size()) {
    throw SlurmError(fmt::format("SLURM_STEP_TASKS_PER_NODE names {} nodes but SLURM_STEP_NODELIST {}", per_node.size(),
                                 step.nodes.size()));
  }
  int total = 0;
  for (int n : per_node) total += n;
  if (total != step.size) {
    throw SlurmError(
        fmt::format("SLURM_STEP_TASKS_PER_NODE adds up to {} tasks but SLURM_STEP_NUM_TASKS={}", total, step.size));
  }
  if (step.node_index >= step.node_count()) {
    throw SlurmError(fmt::format("SLURM_NODEID={} is outside the step's {} nodes", step.node_index, step.node_count()));
  }
  step.local_size = per_node[static_cast<size_t>(step.node_index)];
  if (step.local_rank >= step.local_size) {
    throw SlurmError(fmt::format("SLURM_LOCALID={} is outside 0..{} ({} tasks on node {})", step.local_rank,
                                 step.local_size - 1, step.local_size,
                                 step.nodes[static_cast<size_t>(step.node_index)]));
  }
  return step;
}

int derived_rendezvous_port(const std::string& job_id, const std::string& step_id) {
  const std::uint64_t h = mix(mix(14695981039346656037ull, job_id), "." + step_id);
  return 20000 + static_cast<int>(h % 12000);
}

}  // namespace dtrain::slurm
