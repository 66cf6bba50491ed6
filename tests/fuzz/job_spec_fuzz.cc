// A job spec (job/job_spec.h), as `dtrain job run SPEC` reads it: YAML with channels,
// hyperparameters, resources and the entry point. Overrides are left out (they are the
// command line's, parsed by the same YAML reader).
#include "job/job_spec.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dtrain::fuzz::expect_clean_errors(
      [&] { dtrain::job::parse_job_spec(dtrain::fuzz::as_text(data, size), "fuzz.yaml", "/nonexistent-job-dir"); });
  return 0;
}
