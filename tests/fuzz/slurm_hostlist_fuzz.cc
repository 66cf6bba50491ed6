// Slurm's compressed host lists and tasks-per-node counts (SLURM_JOB_NODELIST,
// SLURM_TASKS_PER_NODE), as a job's environment hands them to every rank.
#include "slurm/hostlist.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = dtrain::fuzz::as_text(data, size);
  dtrain::fuzz::expect_clean_errors([&] { dtrain::slurm::expand_hostlist(text); });
  dtrain::fuzz::expect_clean_errors([&] { dtrain::slurm::expand_tasks_per_node(text); });
  return 0;
}
