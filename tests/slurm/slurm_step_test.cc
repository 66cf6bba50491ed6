#include "slurm/slurm_step.h"

#include <gtest/gtest.h>

#include <map>

namespace dtrain::slurm {
namespace {

// What srun -N2 -n3 gives task 2 (copied from a real step).
std::map<std::string, std::string> third_task() {
  return {{"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_PROCID", "2"},
          {"SLURM_LOCALID", "0"},
          {"SLURM_NODEID", "1"},
          {"SLURM_JOB_ID", "4"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_STEP_NODELIST", "node[1-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2,1"}};
}

std::optional<SlurmStep> step_of(const std::map<std::string, std::string>& vars) {
  return slurm_step_from_environment([&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(SlurmStep, ATaskKnowsItsPlaceInTheStep) {
  const std::optional<SlurmStep> step = step_of(third_task());
  ASSERT_TRUE(step);
  EXPECT_EQ(step->rank, 2);
  EXPECT_EQ(step->size, 3);
  EXPECT_EQ(step->local_rank, 0);
  EXPECT_EQ(step->local_size, 1);
  EXPECT_EQ(step->node_index, 1);
  EXPECT_EQ(step->node_count(), 2);
  EXPECT_EQ(step->first_node(), "node1");
  EXPECT_EQ(step->job_id, "4");
}

TEST(SlurmStep, ABatchScriptIsNoStep) {
  // sbatch sets SLURM_NTASKS and SLURM_PROCID=0 for the script, but no SLURM_STEP_*.
  EXPECT_FALSE(step_of({{"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_ID", "5"}}));
}

TEST(SlurmStep, InconsistentVariablesAreErrorsNamingThem) {
  const std::map<std::string, std::string> changes[] = {
      {{"SLURM_PROCID", "3"}},                   // past the step's tasks
      {{"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}},  // adds up to 4, not 3
      {{"SLURM_STEP_TASKS_PER_NODE", "3"}},      // one node's count for two nodes
      {{"SLURM_LOCALID", "1"}},                  // node2 has one task
      {{"SLURM_NODEID", "2"}},                   // no third node
      {{"SLURM_STEP_NODELIST", "node[1-2"}},     // malformed
      {{"SLURM_PROCID", "two"}},                 // not a number
  };
  for (const auto& change : changes) {
    auto vars = third_task();
    for (const auto& [name, value] : change) vars[name] = value;
    try {
      step_of(vars);
      ADD_FAILURE() << "accepted " << change.begin()->first << "=" << change.begin()->second;
    } catch (const SlurmError& e) {
      EXPECT_NE(std::string(e.what()).find(change.begin()->first), std::string::npos) << e.what();
    }
  }
  auto missing = third_task();
  missing.erase("SLURM_STEP_NODELIST");
  EXPECT_THROW(step_of(missing), SlurmError);
}

TEST(SlurmStep, EveryTaskDerivesTheSamePortInRange) {
  const int port = derived_rendezvous_port("4", "0");
  EXPECT_EQ(port, derived_rendezvous_port("4", "0"));
  EXPECT_NE(port, derived_rendezvous_port("4", "1"));
  for (int job = 1; job < 2000; ++job) {
    const int p = derived_rendezvous_port(std::to_string(job), "0");
    EXPECT_GE(p, 20000);
    EXPECT_LT(p, 32000);
  }
}

}  // namespace
}  // namespace dtrain::slurm
