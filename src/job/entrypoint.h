#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtrain::job {

// `dtrain entrypoint`: the container entry point of SageMaker's contract,
// run on every host of a job with the same arguments.
struct EntrypointOptions {
  std::string base_dir;              // SAGEMAKER_BASE_DIR or /opt/ml
  std::vector<std::string> command;  // the algorithm; else SAGEMAKER_PROGRAM / sagemaker_program
  // How the master starts ranks on hosts (DTRAIN_LAUNCH_AGENT, words split
  // on spaces); nullopt: ssh, as in a real cluster.
  std::optional<std::vector<std::string>> agent;
  int port = 29417;          // DTRAIN_HOST_PORT
  double host_wait_s = 300;  // DTRAIN_HOST_WAIT_S: bounded waits for the other hosts
  double kill_grace_s = 5;
  std::string dtrain_exe;  // this program, to start ranks through `entrypoint --as-rank`
};

// Reads the host's configuration. The master (first of the sorted hosts)
// waits until every other host is reachable, launches processes_per_host
// ranks on every host through the launcher (output tagged "[host:rank]"),
// reports the end to the others and returns the algorithm's exit code.
// Other hosts wait for the master and exit when it reports the end (status
// 0; a failed job's reason goes to their failure file) or disappears (1). Every host writes output/success or
// output/failure (a reason of at most 1024 bytes). Never throws: problems become a failure file and a non-zero exit
// code.
int run_entrypoint(const EntrypointOptions& options);

// `dtrain entrypoint --as-rank -- command...`: how each rank starts on its
// host: exports the host's SM_* variables and executes the command with the
// hyperparameters appended as arguments. Returns only when exec fails (127).
int exec_as_rank(const std::string& base_dir, const std::vector<std::string>& command);

// The options from the environment (SAGEMAKER_BASE_DIR, DTRAIN_LAUNCH_AGENT,
// DTRAIN_HOST_PORT, DTRAIN_HOST_WAIT_S) and this executable's path.
EntrypointOptions entrypoint_options_from_environment();

// A failure reason cut to SageMaker's limit of 1024 bytes (at a UTF-8
// character boundary).
std::string limit_failure_reason(const std::string& reason);

}  // namespace dtrain::job
