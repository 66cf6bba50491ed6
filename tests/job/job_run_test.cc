// Whole jobs through the dtrain binary. Tests on network-namespace hosts need
// root and skip otherwise; the process-host tests run anywhere.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "job/channel_stager.h"
#include "job/container_layout.h"
#include "job/system_command.h"
#include "tests/launch/child_runner.h"
#include "tests/job/test_support.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;
using launch::testing::ChildResult;
using launch::testing::ChildRunner;
using testing::read_file;
using testing::TempDir;
using testing::write_file;
using Json = nlohmann::json;

#define SKIP_UNLESS_ROOT() \
  if (::geteuid() != 0) GTEST_SKIP() << "netns hosts need root (network namespaces)"

Json read_json(const std::string& path) { return Json::parse(read_file(path)); }

ChildResult run_job(const std::string& spec, const std::vector<std::string>& extra, double timeout_s,
                    pid_t* pid_out = nullptr) {
  std::vector<std::string> argv = {DTRAIN_BINARY, "job", "run", spec};
  argv.insert(argv.end(), extra.begin(), extra.end());
  ChildRunner child(argv);
  if (pid_out) *pid_out = child.pid();
  return child.finish(timeout_s);
}

// No namespace, link or /etc/netns entry of the run with this pid is left.
void expect_no_network_leftovers(pid_t runner) {
  std::string ns_prefix = "dtrain-" + std::to_string(runner) + "-";
  CommandResult netns = run_command({"ip", "netns", "list"});
  EXPECT_EQ(netns.output.find(ns_prefix), std::string::npos) << netns.output;
  char stem[32];
  std::snprintf(stem, sizeof(stem), "dtj%06x", static_cast<unsigned>(runner) & 0xFFFFFF);
  CommandResult links = run_command({"ip", "-o", "link", "show"});
  EXPECT_EQ(links.output.find(stem), std::string::npos) << links.output;
  std::error_code ec;
  for (auto it = fs::directory_iterator("/etc/netns", ec); !ec && it != fs::end(it); it.increment(ec)) {
    EXPECT_FALSE(it->path().filename().string().starts_with(ns_prefix)) << it->path();
  }
}

// No shared-memory directory of the run with this pid is left in /dev/shm.
void expect_no_shm_dirs(pid_t runner) {
  std::string prefix = "dtrain-" + std::to_string(runner) + "-algo-";
  std::error_code ec;
  for (auto it = fs::directory_iterator("/dev/shm", ec); !ec && it != fs::end(it); it.increment(ec)) {
    EXPECT_FALSE(it->path().filename().string().starts_with(prefix)) << it->path();
  }
}

// The runtime's rank-tagged log line saying which engine moves its data, e.g.
// "[dtrain rank 1 algo-2] [info] engine: MPI".
std::string engine_line(int rank, const std::string& host, const std::string& engine) {
  return "[dtrain rank " + std::to_string(rank) + " " + host + "] [info] engine: " + engine;
}

std::vector<std::string> lines_in(const std::string& path) {
  std::vector<std::string> lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

size_t lines_in_text(const std::string& text) {
  size_t lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines += line.empty() ? 0 : 1;
  return lines;
}

std::vector<std::string> tar_listing(const std::string& archive) {
  CommandResult r = run_command({"tar", "tzf", archive});
  std::vector<std::string> names;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) names.push_back(line);
  return names;
}

// The process whose command line holds `fragment` and whose environment holds the entry
// `variable` (e.g. "SM_CURRENT_HOST=algo-2"), looked for for up to 10 s; -1 when none appears.
pid_t find_process(const std::string& fragment, const std::string& variable) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const auto& entry : fs::directory_iterator("/proc")) {
      std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmdline = read_file(entry.path().string() + "/cmdline");
      std::string environ = read_file(entry.path().string() + "/environ");
      if (cmdline.find(fragment) != std::string::npos && environ.find(variable + '\0') != std::string::npos) {
        return std::stoi(name);
      }
    }
  }
  return -1;
}

// The rank whose command line holds `marker` on `host` (a rank prints "ready" just before the
// shell becomes the marked sleeper).
pid_t find_rank_on_host(const std::string& marker, const std::string& host) {
  return find_process(marker, "SM_CURRENT_HOST=" + host);
}

// A sleep argument no other process has (`whole`.<pid><n>): a marker to find a job's ranks by
// and to check that none is left.
std::string unique_sleep_seconds(const std::string& whole) {
  static int counter = 0;
  return whole + "." + std::to_string(::getpid()) + std::to_string(counter++);
}

// The entry point of the host whose root is `root` (`dtrain entrypoint -- ...`, not a rank's
// `--as-rank`).
pid_t find_entrypoint(const std::string& root) {
  return find_process(std::string("entrypoint") + '\0' + "--" + '\0', "SAGEMAKER_BASE_DIR=" + root);
}

// An elastic job on process hosts whose ranks wait for DIR/go: they need not use the runtime
// (no round is formed; the launcher waits for its workers as the hosts wait for each other).
void write_waiting_elastic_spec(const TempDir& dir) {
  write_file(dir / "spec.yaml",
             "name: elastic-proc\ncommand: [sh, -c, 'echo ready on $SM_CURRENT_HOST; "
             "while [ ! -e " +
                 (dir / "go") +
                 " ]; do sleep 0.1; done', algo]\n"
                 "instance_count: 3\nelastic: {min_hosts: 1}\noutput_path: out\n");
}

TEST(ProcessHosts, RunsAJobWithArgumentsMetricsAndArtifacts) {
  TempDir dir;
  write_file(dir / "data/a.txt", "alpha");
  write_file(dir / "spec.yaml", R"y(
name: proc-job
command: ["sh", "-c", "echo \"rank $DTRAIN_RANK of $DTRAIN_SIZE on $SM_CURRENT_HOST loss: 0.$DTRAIN_RANK\"; cat $SM_CHANNEL_TRAINING/a.txt > $SM_MODEL_DIR/seen-$DTRAIN_RANK; printf '%s|' \"$@\" > $SM_OUTPUT_DATA_DIR/args-$DTRAIN_RANK", "algo"]
instance_count: 2
processes_per_host: 2
hyperparameters: {lr: 0.5, opt: adam, amp: true}
channels:
  training: {source: data}
metric_definitions:
  - {name: loss, regex: "loss: ([0-9.]+)"}
output_path: out
)y");
  ChildResult r = run_job(dir / "spec.yaml", {"--hosts", "process", "--work-dir", dir / "work", "--keep-work-dir"}, 60);
  ASSERT_TRUE(r.exited) << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[algo-1] [algo-2:3]<stdout>:rank 3 of 4 on algo-2 loss: 0.3"), std::string::npos) << r.out;

  Json summary = read_json(dir / "out/proc-job/summary.json");
  EXPECT_EQ(summary["status"], "Completed");
  EXPECT_EQ(summary["hosts"][1]["exit_code"], 0);
  EXPECT_EQ(summary["final_metrics"].size(), 1u);
  EXPECT_EQ(summary["metric_samples"], 4);
  EXPECT_EQ(summary["engine"], "gloo");
  EXPECT_GT(summary["started_at"].get<double>(), 1.6e9);
  // status.json, the live record the dashboard reads, ends with the job.
  Json status = read_json(dir / "out/proc-job/status.json");
  EXPECT_EQ(status["status"], "Completed");
  EXPECT_EQ(status["failure_reason"], nullptr);
  EXPECT_EQ(status["metric_names"], Json::array({"loss"}));
  ASSERT_EQ(status["hosts"].size(), 2u);
  for (const auto& host : status["hosts"]) {
    EXPECT_EQ(host["state"], "exited") << host;
    EXPECT_EQ(host["exit_code"], 0) << host;
    EXPECT_EQ(host["staging"].size(), 1u) << host;
  }
  // ranks.json: the master's launcher's record of every rank.
  Json ranks = read_json(dir / "out/proc-job/ranks.json")["ranks"];
  ASSERT_EQ(ranks.size(), 4u) << ranks;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(ranks[rank]["rank"], rank);
    EXPECT_EQ(ranks[rank]["host"], rank < 2 ? "algo-1" : "algo-2");
    EXPECT_EQ(ranks[rank]["state"], "exited") << ranks[rank];
    EXPECT_EQ(ranks[rank]["exit_code"], 0) << ranks[rank];
  }
  auto metrics = lines_in(dir / "out/proc-job/metrics.jsonl");
  ASSERT_EQ(metrics.size(), 4u);
  std::set<std::pair<std::string, int>> seen;
  for (const auto& line : metrics) {
    Json m = Json::parse(line);
    EXPECT_EQ(m["name"], "loss");
    EXPECT_DOUBLE_EQ(m["value"].get<double>(), m["rank"].get<int>() / 10.0);
    seen.insert({m["host"].get<std::string>(), m["rank"].get<int>()});
    EXPECT_GT(m["time"].get<double>(), 1.6e9);
  }
  EXPECT_EQ(seen, (std::set<std::pair<std::string, int>>{{"algo-1", 0}, {"algo-1", 1}, {"algo-2", 2}, {"algo-2", 3}}));
  auto model = tar_listing(dir / "out/proc-job/model.tar.gz");
  EXPECT_NE(std::find(model.begin(), model.end(), "./seen-0"), model.end());
  EXPECT_NE(std::find(model.begin(), model.end(), "./seen-1"), model.end());
  EXPECT_TRUE(fs::exists(dir / "out/proc-job/output.tar.gz"));
  EXPECT_TRUE(fs::exists(dir / "out/proc-job/logs/algo-1.log"));
  EXPECT_EQ(read_file(dir / "work/hosts/algo-2/output/data/args-2"), "--amp|True|--lr|0.5|--opt|adam|");
  EXPECT_TRUE(fs::exists(dir / "work/hosts/algo-1/output/success"));
  EXPECT_TRUE(fs::exists(dir / "work/hosts/algo-2/output/success"));
}

// engine mpi on process hosts: the master runs mpirun, whose daemons start on algo-1 and
// algo-2 through `dtrain job host-exec`. Two ranks per host also use Open MPI's shared
// memory within each host, which needs each host's own segment directory.
TEST(ProcessHosts, MpiEngineRunsCollectivesWithMetricsAndArtifacts) {
  TempDir dir;
  write_file(dir / "spec.yaml",
             std::string(R"y(
name: mpi-proc
command: ["sh", "-c", "echo \"mpi world $OMPI_COMM_WORLD_SIZE rank $OMPI_COMM_WORLD_RANK on $SM_CURRENT_HOST DTRAIN_SIZE=${DTRAIN_SIZE:-unset} loss: 0.$OMPI_COMM_WORLD_RANK\" && )y") +
                 DTRAIN_COLLECTIVES_DEMO +
                 R"y( && echo $OMPI_COMM_WORLD_RANK > $SM_MODEL_DIR/model-$OMPI_COMM_WORLD_RANK", "algo"]
instance_count: 2
processes_per_host: 2
distribution: {engine: mpi}
environment: {DTRAIN_LOG_LEVEL: info}
metric_definitions:
  - {name: loss, regex: "loss: ([0-9.]+)"}
  - {name: allreduce_sum, regex: "allreduce Sum \\[([0-9.]+)"}
output_path: out
)y");
  pid_t runner = 0;
  auto started = std::chrono::steady_clock::now();
  ChildResult r = run_job(dir / "spec.yaml", {"--hosts", "process", "--work-dir", dir / "work"}, 90, &runner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(r.exited) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::printf("mpi job on 2 process hosts x 2 ranks: %.2f s\n", seconds);
  for (int rank = 0; rank < 4; ++rank) {
    std::string host = rank < 2 ? "algo-1" : "algo-2";
    std::string tag = "[algo-1] [" + host + ":" + std::to_string(rank) + "]";
    EXPECT_NE(r.out.find(tag + "<stdout>:mpi world 4 rank " + std::to_string(rank) + " on " + host +
                         " DTRAIN_SIZE=unset loss: 0." + std::to_string(rank)),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(tag + "<stdout>:rank " + std::to_string(rank) + ": all collectives correct"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find(engine_line(rank, host, "MPI")), std::string::npos) << r.err;
  }
  // The runtime groups ranks by job host, as with Gloo.
  EXPECT_NE(r.out.find("[algo-2:3]<stdout>:rank 3 of 4 on host"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(local rank 1 of 2, cross rank 1 of 2)"), std::string::npos) << r.out;

  std::string out = dir / "out/mpi-proc";
  Json summary = read_json(out + "/summary.json");
  EXPECT_EQ(summary["status"], "Completed");
  EXPECT_EQ(summary["hosts"][1]["exit_code"], 0);
  EXPECT_EQ(summary["final_metrics"]["allreduce_sum"], 10.0);
  EXPECT_EQ(summary["metric_samples"], 8);
  std::set<std::pair<std::string, int>> seen;
  for (const auto& line : lines_in(out + "/metrics.jsonl")) {
    Json m = Json::parse(line);
    if (m["name"] != "loss") continue;
    EXPECT_DOUBLE_EQ(m["value"].get<double>(), m["rank"].get<int>() / 10.0);
    seen.insert({m["host"].get<std::string>(), m["rank"].get<int>()});
  }
  EXPECT_EQ(seen, (std::set<std::pair<std::string, int>>{{"algo-1", 0}, {"algo-1", 1}, {"algo-2", 2}, {"algo-2", 3}}));
  auto model = tar_listing(out + "/model.tar.gz");
  EXPECT_NE(std::find(model.begin(), model.end(), "./model-0"), model.end());
  EXPECT_NE(std::find(model.begin(), model.end(), "./model-1"), model.end());
  EXPECT_EQ(std::find(model.begin(), model.end(), "./model-2"), model.end());  // algo-2's model dir
  // Nothing of the job is left: no agent, daemon or rank (their command lines name the work
  // directory or the demo), no shared-memory directory.
  EXPECT_EQ(launch::testing::wait_for_no_marker(dir / "work", 5), 0);
  EXPECT_EQ(launch::testing::wait_for_no_marker(DTRAIN_COLLECTIVES_DEMO, 5), 0);
  expect_no_shm_dirs(runner);
}

TEST(ProcessHosts, BadSpecListsEveryBadFieldAndExits2) {
  TempDir dir;
  write_file(dir / "bad.yaml", R"y(
name: "bad name"
command: []
instance_count: zero
channels:
  training: {input_mode: Stream}
metric_definitions: [{name: loss, regex: "("}]
unknown_field: 1
)y");
  ChildResult r = run_job(dir / "bad.yaml", {}, 30);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2);
  for (const char* field : {"name:", "command:", "instance_count:", "channels.training.source:",
                            "channels.training.input_mode:", "metric_definitions[0].regex:", "unknown_field:"}) {
    EXPECT_NE(r.err.find(std::string("  ") + field), std::string::npos) << field << "\n" << r.err;
  }
  EXPECT_NE(r.err.find("7 problems"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
}

// A spec whose channel lives elsewhere (on the Kubernetes job's volume), not on this machine.
void write_spec_with_remote_channel(const std::string& path) {
  write_file(path, R"y(
name: remote-channel
command: [sh, -c, "exit 0"]
instance_count: 2
channels:
  training: {source: /no/such/dtrain-channel, shared: true}
output_path: out
)y");
}

TEST(JobCommands, RenderNeedsNoChannelSourceOnThisMachine) {
  TempDir dir;
  write_spec_with_remote_channel(dir / "spec.yaml");
  ChildRunner render({DTRAIN_BINARY, "job", "render", "--target", "kubeflow", dir / "spec.yaml"});
  ChildResult r = render.finish(30);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kind: MPIJob"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/data/channels/training"), std::string::npos) << r.out;

  // Every other check of the spec still applies.
  ChildRunner bad({DTRAIN_BINARY, "job", "render", dir / "spec.yaml", "--set", "instance_count=0"});
  ChildResult refused = bad.finish(30);
  ASSERT_TRUE(refused.exited);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("  instance_count: must be an integer in 1..200"), std::string::npos) << refused.err;
}

// An elastic job's worker host whose entry point dies is lost: the runner says so and goes on;
// the job completes when the master's launcher does. The ranks here run on (they are the master's).
TEST(ProcessHosts, ElasticJobGoesOnWithoutAWorkerHostWhoseEntryPointDied) {
  TempDir dir;
  write_waiting_elastic_spec(dir);
  ChildRunner child({DTRAIN_BINARY, "job", "run", dir / "spec.yaml", "--work-dir", dir / "work"});
  ASSERT_TRUE(child.wait_for_stdout("]<stdout>:ready on algo-", 60, 3)) << child.out();
  const pid_t algo2 = find_entrypoint(dir / "work/hosts/algo-2");
  ASSERT_GT(algo2, 0);
  ASSERT_EQ(::kill(algo2, SIGKILL), 0);
  // The ranks are let go once the runner has reaped the dead entry point (a zombie still
  // answers kill 0), so the loss comes first.
  for (int i = 0; i < 600 && ::kill(algo2, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  write_file(dir / "go", "");
  ChildResult r = child.finish(60);
  ASSERT_TRUE(r.exited) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string lost = "algo-2: its entry point was killed by signal 9 (SIGKILL)";
  EXPECT_NE(r.err.find("dtrain job elastic-proc: algo-2 lost (" + lost + "); the job goes on without it\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("dtrain job elastic-proc: Completed in "), std::string::npos) << r.out;
  Json summary = read_json(dir / "out/elastic-proc/summary.json");
  EXPECT_EQ(summary["status"], "Completed");
  EXPECT_EQ(summary["exit_code"], 0);
  EXPECT_EQ(summary["elastic"]["min_hosts"], 1);
  EXPECT_EQ(summary["elastic"]["max_hosts"], 3);
  EXPECT_EQ(summary["hosts"][1]["lost"], lost);
  EXPECT_EQ(summary["hosts"][1]["exit_code"], 137);
  EXPECT_EQ(summary["hosts"][1]["stopped_because"], nullptr);
  for (int h : {0, 2}) EXPECT_EQ(summary["hosts"][h]["lost"], nullptr) << summary["hosts"][h];
  Json status = read_json(dir / "out/elastic-proc/status.json");
  EXPECT_EQ(status["status"], "Completed");
  EXPECT_EQ(status["hosts"][1]["state"], "lost");
  EXPECT_EQ(status["hosts"][1]["signal"], 9);
  EXPECT_EQ(status["hosts"][1]["reason"], lost);
  EXPECT_EQ(status["hosts"][0]["state"], "exited");
  EXPECT_EQ(launch::testing::wait_for_no_marker(dir / "go", 5), 0);
}

// The master (algo-1 runs the launcher) is not a host an elastic job can lose.
TEST(ProcessHosts, ElasticJobEndsWhenTheMasterHostsEntryPointDies) {
  TempDir dir;
  write_waiting_elastic_spec(dir);
  ChildRunner child({DTRAIN_BINARY, "job", "run", dir / "spec.yaml", "--work-dir", dir / "work"});
  ASSERT_TRUE(child.wait_for_stdout("]<stdout>:ready on algo-", 60, 3)) << child.out();
  const pid_t algo1 = find_entrypoint(dir / "work/hosts/algo-1");
  ASSERT_GT(algo1, 0);
  ASSERT_EQ(::kill(algo1, SIGKILL), 0);
  ChildResult r = child.finish(60);
  ASSERT_TRUE(r.exited) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 137) << r.out << r.err;
  EXPECT_EQ(r.err.find(" lost ("), std::string::npos) << r.err;
  Json summary = read_json(dir / "out/elastic-proc/summary.json");
  EXPECT_EQ(summary["status"], "Failed");
  EXPECT_EQ(summary["failure_reason"], "algo-1: its entry point was killed by signal 9 (SIGKILL)");
  for (int h : {1, 2}) {
    EXPECT_EQ(summary["hosts"][h]["stopped_because"], "algo-1 failed") << summary["hosts"][h];
    EXPECT_EQ(summary["hosts"][h]["lost"], nullptr) << summary["hosts"][h];
  }
  // The launcher's guardian stops the ranks when the launcher is killed outright.
  EXPECT_EQ(launch::testing::wait_for_no_marker(dir / "go", 10), 0);
}

TEST(JobCommands, RenderRefusesAnElasticJobInOneLine) {
  TempDir dir;
  write_file(dir / "spec.yaml", "name: e\ncommand: [x]\ninstance_count: 2\nelastic: {min_hosts: 1}\n");
  for (const std::string target : {"kubeflow", "slurm"}) {
    ChildRunner render({DTRAIN_BINARY, "job", "render", "--target", target, dir / "spec.yaml"});
    ChildResult r = render.finish(30);
    ASSERT_TRUE(r.exited);
    EXPECT_EQ(r.exit_code, 2) << target;
    EXPECT_EQ(r.out, "") << target;
    EXPECT_TRUE(r.err.starts_with("dtrain job: elastic: not supported ")) << r.err;
    EXPECT_EQ(lines_in_text(r.err), 1u) << r.err;
  }
  ChildRunner validate({DTRAIN_BINARY, "job", "validate", dir / "spec.yaml"});
  ChildResult v = validate.finish(30);
  EXPECT_EQ(v.exit_code, 0) << v.err;
}

// The launch agent of local hosts answers as ssh does for a host that is down (255) once the
// host's entry point has failed, so an elastic launcher sets the host aside again.
TEST(JobCommands, HostExecAnswersLikeSshForAHostWhoseEntryPointFailed) {
  TempDir dir;
  write_file(dir / "hosts.json",
             R"({"kind": "process", "hosts": [{"name": "algo-2", "address": "127.0.0.2", "root": ")" +
                 (dir / "algo-2") + R"("}]})");
  ChildRunner up({DTRAIN_BINARY, "job", "host-exec", "--table", dir / "hosts.json", "algo-2", "echo", "on", "algo-2"});
  ChildResult r = up.finish(30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "on algo-2\n");
  write_file(dir / "algo-2/output/failure", "ClientError: algo-2: the link to the master algo-1 failed");
  ChildRunner down(
      {DTRAIN_BINARY, "job", "host-exec", "--table", dir / "hosts.json", "algo-2", "echo", "on", "algo-2"});
  r = down.finish(30);
  EXPECT_EQ(r.exit_code, 255);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "dtrain job host-exec: algo-2 is down: ClientError: algo-2: the link to the master algo-1 failed\n");
}

TEST(JobCommands, RunRefusesAMissingChannelSourceInOneLine) {
  TempDir dir;
  write_spec_with_remote_channel(dir / "spec.yaml");
  ChildResult r = run_job(dir / "spec.yaml", {"--work-dir", dir / "work"}, 30);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "dtrain job: channels.training.source: no such directory on this machine: "
            "/no/such/dtrain-channel\n");
  EXPECT_FALSE(fs::exists(dir / "out"));
  EXPECT_FALSE(fs::exists(dir / "work"));
}

// --dashboard [PORT]: a port that is not one, or is taken, stops the run before anything starts.
TEST(JobCommands, RunRefusesADashboardItCannotServeInOneLine) {
  TempDir dir;
  write_file(dir / "spec.yaml", "name: dash\ncommand: [\"true\"]\noutput_path: out\n");
  ChildResult bad = run_job(dir / "spec.yaml", {"--dashboard", "http", "--work-dir", dir / "work"}, 30);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "dtrain job: --dashboard takes a port (0-65535), got 'http'\n");
  // A port this test holds.
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(addr);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &length), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  ChildResult taken = run_job(dir / "spec.yaml", {"--dashboard", port, "--work-dir", dir / "work"}, 30);
  ::close(holder);
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_EQ(taken.err, "dtrain job: --dashboard: cannot listen on 127.0.0.1:" + port +
                           " (in use, or not an address of this host)\n");
  EXPECT_FALSE(fs::exists(dir / "work"));
}

TEST(JobCommands, ValidateAcceptsAMissingChannelSourceWithANote) {
  TempDir dir;
  write_spec_with_remote_channel(dir / "spec.yaml");
  ChildRunner validate({DTRAIN_BINARY, "job", "validate", dir / "spec.yaml"});
  ChildResult r = validate.finish(30);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("valid job remote-channel"), std::string::npos) << r.out;
  EXPECT_EQ(r.err,
            "dtrain job: note: channels.training.source: no such directory on this machine: "
            "/no/such/dtrain-channel (needed by dtrain job run)\n");
}

// A typo in a setting the entry point reads is the host's one-line error, not another value
// (atof took DTRAIN_HOST_WAIT_S=2m as 2 seconds, atoi a port of 29x as 29).
TEST(Entrypoint, AMalformedSettingIsAOneLineErrorNamingItsVariable) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"DTRAIN_HOST_WAIT_S=2m",
       "dtrain entrypoint: DTRAIN_HOST_WAIT_S='2m' is not a number of seconds: expected a "
       "decimal above 0, e.g. 300 or 2.5\n"},
      {"DTRAIN_HOST_PORT=29x",
       "dtrain entrypoint: DTRAIN_HOST_PORT='29x' is not a port: expected a whole number "
       "from 1 to 65535\n"}};
  for (const auto& [setting, message] : cases) {
    ChildRunner child({DTRAIN_BINARY, "entrypoint", "--base-dir", dir / "opt/ml", "--", "true"}, {setting});
    ChildResult r = child.finish(30);
    EXPECT_TRUE(r.exited && r.exit_code == 2) << setting << ": " << r.err;
    EXPECT_EQ(r.err, message) << setting;
  }
}

TEST(Entrypoint, AsRankExportsTheToolkitEnvironmentAndArguments) {
  TempDir dir;
  ContainerLayout layout(dir / "opt/ml");
  ContainerConfig config;
  config.hyperparameters_file = Json::parse(
      R"({"epochs": "10", "optimizer": "\"adam\"", "use_amp": "true", "momentum": "1e-05", "name": "plain text", "quoted_number": "\"5\"", "x": "1.0"})");
  config.resource.current_host = "algo-1";
  config.resource.hosts = {"algo-1"};
  config.input_data_config = Json::parse(R"({"training": {"TrainingInputMode": "File"}})");
  write_container_config(layout, config);
  ChildRunner child({DTRAIN_BINARY, "entrypoint", "--as-rank", "--base-dir", layout.base_dir(), "--", "sh", "-c",
                     "env > \"$SM_OUTPUT_DATA_DIR/env\"; printf '%s\\n' \"$@\" > \"$SM_OUTPUT_DATA_DIR/args\"",
                     "algo"});
  ChildResult r = child.finish(30);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  EXPECT_EQ(read_file(layout.output_data_dir() + "/args"),
            "--epochs\n10\n--momentum\n1e-05\n--name\nplain text\n--optimizer\nadam\n--quoted_number\n5\n"
            "--use_amp\nTrue\n-x\n1.0\n");
  std::string env = read_file(layout.output_data_dir() + "/env");
  for (const std::string& line : std::vector<std::string>{
           "SM_HP_OPTIMIZER=adam", "SM_HP_USE_AMP=true", "SM_HP_QUOTED_NUMBER=5", "SM_HP_X=1.0", "SM_HP_MOMENTUM=1e-05",
           "SM_CURRENT_HOST=algo-1", "SM_HOSTS=[\"algo-1\"]", "SM_CHANNELS=[\"training\"]",
           "SM_CHANNEL_TRAINING=" + layout.channel_dir("training"), "SM_MODEL_DIR=" + layout.model_dir(),
           std::string("SM_HPS={\"epochs\":10,\"momentum\":1e-05,\"name\":\"plain text\",\"optimizer\":\"adam\","
                       "\"quoted_number\":\"5\",\"use_amp\":true,\"x\":1.0}")}) {
    EXPECT_NE(env.find("\n" + line + "\n"), std::string::npos) << line;
  }
}

TEST(NetnsHosts, ChannelsShardedReplicatedAndShared) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  for (int i = 0; i < 7; ++i) write_file(dir / ("keys/part-" + std::to_string(i)), std::string(100 + i, 'k'));
  write_file(dir / "full/sub/x.bin", std::string(4096, 'x'));
  write_file(dir / "full/y.bin", "y");
  write_file(dir / "spec.yaml", R"y(
name: channels
command: ["sh", "-c", "cd $SM_CHANNEL_SHARDED && find . -type f | sort > $SM_OUTPUT_DATA_DIR/sharded; cd $SM_CHANNEL_FULL && find . -type f | sort > $SM_OUTPUT_DATA_DIR/full; readlink -f $SM_CHANNEL_COMMON > $SM_OUTPUT_DATA_DIR/common", "algo"]
instance_count: 3
channels:
  sharded: {source: keys, distribution: ShardedByKey}
  full: {source: full}
  common: {source: keys, shared: true}
output_path: out
)y");
  pid_t runner = 0;
  ChildResult r =
      run_job(dir / "spec.yaml", {"--hosts", "netns", "--work-dir", dir / "work", "--keep-work-dir"}, 90, &runner);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  std::vector<std::string> together;
  for (int h = 1; h <= 3; ++h) {
    std::string data = dir / ("work/hosts/algo-" + std::to_string(h) + "/output/data/");
    auto shard = lines_in(data + "sharded");
    EXPECT_EQ(shard.size(), h == 1 ? 3u : 2u);
    together.insert(together.end(), shard.begin(), shard.end());
    EXPECT_EQ(lines_in(data + "full"), (std::vector<std::string>{"./sub/x.bin", "./y.bin"}));
    EXPECT_EQ(lines_in(data + "common")[0], fs::canonical(dir / "keys").string());
  }
  std::sort(together.begin(), together.end());
  std::vector<std::string> all;
  for (int i = 0; i < 7; ++i) all.push_back("./part-" + std::to_string(i));
  EXPECT_EQ(together, all);  // disjoint (no duplicates) and complete
  EXPECT_NE(r.out.find("algo-3: channel full: staged 2 files, 4097 bytes in"), std::string::npos) << r.out;
  Json summary = read_json(dir / "out/channels/summary.json");
  EXPECT_EQ(summary["hosts"][0]["staging"].size(), 3u);
  expect_no_network_leftovers(runner);
}

TEST(NetnsHosts, PipeModeDeliversEveryByteForTwoEpochs) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  std::string expected;
  for (int i = 0; i < 3; ++i) {
    std::string bytes;
    for (int k = 0; k < 150000 * (i + 1) + 7; ++k) bytes += static_cast<char>((k * 131 + i * 7) & 0xFF);
    write_file(dir / ("stream/file-" + std::to_string(i)), bytes);
    expected += bytes;
  }
  write_file(dir / "spec.yaml", R"y(
name: pipes
command: ["sh", "-c", "cat $SM_INPUT_DIR/data/training_0 > $SM_OUTPUT_DATA_DIR/epoch0 && cat $SM_INPUT_DIR/data/training_1 > $SM_OUTPUT_DATA_DIR/epoch1 && test -p $SM_INPUT_DIR/data/training_0", "algo"]
instance_count: 3
channels:
  training: {source: stream, input_mode: Pipe}
output_path: out
)y");
  pid_t runner = 0;
  ChildResult r =
      run_job(dir / "spec.yaml", {"--hosts", "netns", "--work-dir", dir / "work", "--keep-work-dir"}, 90, &runner);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
  for (int h = 1; h <= 3; ++h) {
    std::string data = dir / ("work/hosts/algo-" + std::to_string(h) + "/output/data/");
    EXPECT_TRUE(read_file(data + "epoch0") == expected) << "host " << h << " epoch 0";
    EXPECT_TRUE(read_file(data + "epoch1") == expected) << "host " << h << " epoch 1";
  }
  Json summary = read_json(dir / "out/pipes/summary.json");
  ASSERT_EQ(summary["pipe_channels"].size(), 3u);
  for (const auto& p : summary["pipe_channels"]) {
    EXPECT_GE(p["epochs_completed"].get<int>(), 2);
  }
  expect_no_network_leftovers(runner);
}

TEST(NetnsHosts, LeftoversOfACrashedRunAreRemovedByTheNextRun) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  std::string marker = "3000.7" + std::to_string(::getpid());
  write_file(dir / "crash.yaml", "name: crash\ncommand: [sh, -c, 'echo ready; exec sleep " + marker +
                                     "', algo]\ninstance_count: 2\noutput_path: out\n");
  write_file(dir / "next.yaml", "name: next\ncommand: ['true']\ninstance_count: 2\noutput_path: out\n");
  ChildRunner crashed(
      {DTRAIN_BINARY, "job", "run", dir / "crash.yaml", "--hosts", "netns", "--work-dir", dir / "work"});
  pid_t crashed_pid = crashed.pid();
  ASSERT_TRUE(crashed.wait_for_stdout("]<stdout>:ready", 60, 2)) << crashed.out();
  crashed.signal(SIGKILL);  // no teardown: its namespaces and links stay behind
  crashed.finish(10);
  CommandResult before = run_command({"ip", "netns", "list"});
  EXPECT_NE(before.output.find("dtrain-" + std::to_string(crashed_pid) + "-algo-1"), std::string::npos);

  pid_t next_pid = 0;
  ChildResult r = run_job(dir / "next.yaml", {"--hosts", "netns"}, 60, &next_pid);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  expect_no_network_leftovers(crashed_pid);
  expect_no_network_leftovers(next_pid);
  expect_no_shm_dirs(crashed_pid);
  expect_no_shm_dirs(next_pid);
  EXPECT_EQ(launch::testing::wait_for_no_marker(marker, 10), 0);
}

// Algo-3 cut off from the network mid-run (its eth0 down) while the ranks run allreduces: its
// entry point's link to the master fails first (TCP keepalive, about 8 s; the collectives would
// give up only after DTRAIN_TIMEOUT_S), the runner stops the other hosts, and the job's failure
// is algo-3's, not the SIGTERM the master got because of it.
TEST(NetnsHosts, AHostCutOffMidRunIsTheJobsFailureAndStopsTheOthers) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  write_file(dir / "spec.yaml", std::string(R"y(
name: partition
command: [")y") + DTRAIN_ALLREDUCE_LOOP +
                                    R"y("]
instance_count: 3
environment: {DTRAIN_TIMEOUT_S: "30"}
max_run_seconds: 90
output_path: out
)y");
  ChildRunner child({DTRAIN_BINARY, "job", "run", dir / "spec.yaml", "--hosts", "netns", "--work-dir", dir / "work",
                     "--keep-work-dir"});
  pid_t runner = child.pid();
  ASSERT_TRUE(child.wait_for_stdout(": ready", 60, 3)) << child.out();

  const std::string algo3 = "dtrain-" + std::to_string(runner) + "-algo-3";  // local_cluster's namespace name
  auto cut_at = std::chrono::steady_clock::now();
  CommandResult down = run_command({"ip", "netns", "exec", algo3, "ip", "link", "set", "eth0", "down"});
  ASSERT_EQ(down.exit_code, 0) << down.output;
  ChildResult r = child.finish(100);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count();
  std::printf("algo-3 cut off to job end: %.2f s\n", seconds);
  ASSERT_TRUE(r.exited) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.err;  // algo-3's entry point's, not the stopped master's 143
  // The job ends on the failure, long before max_run_seconds would have ended it.
  EXPECT_LT(seconds, 60) << r.err;

  Json summary = read_json(dir / "out/partition/summary.json");
  EXPECT_EQ(summary["status"], "Failed");
  const std::string reason = summary["failure_reason"];
  EXPECT_TRUE(reason.starts_with("ClientError: algo-3: the link to the master algo-1 failed (") &&
              reason.ends_with(") before the job ended"))
      << reason;
  EXPECT_EQ(summary["hosts"][2]["failure"], reason);
  EXPECT_EQ(summary["hosts"][2]["stopped_because"], nullptr);
  for (int h : {0, 1}) EXPECT_EQ(summary["hosts"][h]["stopped_because"], "algo-3 failed") << summary["hosts"][h];
  EXPECT_NE(r.err.find("dtrain job partition: algo-1, algo-2 stopped because algo-3 failed\n"
                       "dtrain job partition: Failed (exit 1): " +
                       reason),
            std::string::npos)
      << r.err;
  EXPECT_EQ(launch::testing::wait_for_no_marker(DTRAIN_ALLREDUCE_LOOP, 5), 0);
  expect_no_network_leftovers(runner);
  expect_no_shm_dirs(runner);
}

// The elastic counterpart: three hosts, min_hosts 2, training MNIST for one epoch. Algo-3 is cut
// off mid-run. Its worker stops answering; the launcher on algo-1 gives up on it after
// DTRAIN_TIMEOUT_S and stops it, and the workers on algo-1 and algo-2 go on from their last
// commit; algo-3's entry point loses its link to the master, and that host is lost, not the
// job's failure. No timing is asserted: a loaded machine only makes it slower.
TEST(NetnsHosts, ElasticJobGoesOnWhenAHostIsCutOffMidRun) {
  SKIP_UNLESS_ROOT();
  TempDir dir;
  write_file(dir / "spec.yaml", std::string(R"y(
name: elastic-mnist
command: [")y") + DTRAIN_MNIST + R"y("]
instance_count: 3
hyperparameters: {elastic: true, threads: 1, commit-every: 10, log-every: 10}
channels:
  training: {source: ")y" + MNIST_DATA_DIR +
                                    R"y(", shared: true}
elastic: {min_hosts: 2}
environment: {DTRAIN_TIMEOUT_S: "10", OMP_NUM_THREADS: "1"}
metric_definitions:
  - {name: test:accuracy, regex: "Test accuracy: ([0-9.]+)"}
max_run_seconds: 540
output_path: out
)y");
  ChildRunner child({DTRAIN_BINARY, "job", "run", dir / "spec.yaml", "--hosts", "netns", "--work-dir", dir / "work",
                     "--keep-work-dir"});
  pid_t runner = child.pid();
  ASSERT_TRUE(child.wait_for_stdout("<stdout>:Step #30\t", 300)) << child.out();
  const std::string algo3 = "dtrain-" + std::to_string(runner) + "-algo-3";  // local_cluster's namespace name
  CommandResult down = run_command({"ip", "netns", "exec", algo3, "ip", "link", "set", "eth0", "down"});
  ASSERT_EQ(down.exit_code, 0) << down.output;
  ChildResult r = child.finish(560);
  ASSERT_TRUE(r.exited) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  // The launcher gave up on algo-3's worker and formed a world of two; the runner lost algo-3.
  EXPECT_NE(r.err.find("[algo-1] dtrain run: elastic: host algo-3: worker 2 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[algo-1] dtrain run: elastic: round 2: 2 ranks (rank 0 = worker 0 on algo-1, "
                       "rank 1 = worker 1 on algo-2)"),
            std::string::npos)
      << r.err;
  const std::string lost = "ClientError: algo-3: the link to the master algo-1 failed (";
  EXPECT_NE(r.err.find("dtrain job elastic-mnist: algo-3 lost (" + lost), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("<stdout>:World changed: 3 -> 2 ranks (round 2, a worker was lost)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("dtrain job elastic-mnist: Completed in "), std::string::npos) << r.out;
  std::smatch accuracy;
  ASSERT_TRUE(std::regex_search(r.out, accuracy, std::regex(R"(\[algo-1:0\]<stdout>:Test accuracy: ([0-9.]+))")))
      << r.out;
  EXPECT_GT(std::stod(accuracy[1]), 0.9) << r.out;

  Json summary = read_json(dir / "out/elastic-mnist/summary.json");
  EXPECT_EQ(summary["status"], "Completed");
  EXPECT_EQ(summary["exit_code"], 0);
  EXPECT_EQ(summary["failure_reason"], nullptr);
  EXPECT_EQ(summary["elastic"]["min_hosts"], 2);
  EXPECT_TRUE(summary["hosts"][2]["lost"].get<std::string>().starts_with(lost)) << summary["hosts"][2];
  for (int h : {0, 1}) {
    EXPECT_EQ(summary["hosts"][h]["lost"], nullptr) << summary["hosts"][h];
    EXPECT_EQ(summary["hosts"][h]["exit_code"], 0) << summary["hosts"][h];
  }
  EXPECT_GT(summary["final_metrics"]["test:accuracy"].get<double>(), 0.9) << summary;
  EXPECT_EQ(summary["processes_left_behind"], 0);
  EXPECT_TRUE(fs::exists(dir / "out/elastic-mnist/model.tar.gz"));
  EXPECT_EQ(launch::testing::wait_for_no_marker(DTRAIN_MNIST, 10), 0);
  expect_no_network_leftovers(runner);
  expect_no_shm_dirs(runner);
}

// The same jobs with each engine the ranks can move data with: a test of this kind runs once
// per engine and is named after it, e.g.
// Engines/NetnsHostsWithEngine.KillingOneHostsRankEndsTheJobNamingTheRank/mpi.
struct EngineCase {
  std::string engine;               // distribution.engine, and the test's name
  std::string world;                // shell words for a rank's world size and rank, as its launcher sets them
  std::string engine_log;           // what the runtime's "engine: ..." log line names
  std::string custom_option;        // what custom_mpi_options' -x CUSTOM_OPTION=seen delivers
  std::string killed_rank_failure;  // the master's failure when rank 1 (on algo-2) is SIGKILLed
};

std::string engine_name(const ::testing::TestParamInfo<EngineCase>& info) { return info.param.engine; }
void PrintTo(const EngineCase& e, std::ostream* out) { *out << e.engine; }

const auto kEngines = ::testing::Values(
    EngineCase{"gloo", "$DTRAIN_SIZE rank $DTRAIN_RANK", "Gloo", "",  // the options are mpirun's
               "AlgorithmError: rank 1 (host algo-2) exited with status 137"},
    EngineCase{"mpi", "$OMPI_COMM_WORLD_SIZE rank $OMPI_COMM_WORLD_RANK", "MPI", "seen",
               "AlgorithmError: rank 1 (host algo-2) was killed by signal 9 (SIGKILL); mpirun exited with status 137"});

class ProcessHostsWithEngine : public ::testing::TestWithParam<EngineCase> {};

TEST_P(ProcessHostsWithEngine, MaxRunSecondsStopsTheJobAndItsRanks) {
  const EngineCase& e = GetParam();
  TempDir dir;
  const std::string marker = unique_sleep_seconds("3000");
  write_file(dir / "spec.yaml", "name: slow\ncommand: [sleep, '" + marker +
                                    "']\ninstance_count: 2\nmax_run_seconds: 1.5\ndistribution: {engine: " + e.engine +
                                    "}\noutput_path: out\n");
  // mpirun takes 1-2 s to stop its ranks after SIGTERM (Open MPI's odls_base_sigkill_timeout
  // is 1 s); with 5 s of grace the master sees it end and reports SIGTERM (143), not SIGKILL.
  // The job ending at all (run_job's limit is 60 s) shows the sleepers were stopped.
  ChildResult r = run_job(dir / "spec.yaml", {"--kill-grace-s", "5", "--work-dir", dir / "work"}, 60);
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 143) << r.out << r.err;
  Json summary = read_json(dir / "out/slow/summary.json");
  EXPECT_EQ(summary["status"], "Failed");
  EXPECT_TRUE(summary["failure_reason"].get<std::string>().starts_with("MaxRuntimeExceeded")) << summary;
  EXPECT_EQ(launch::testing::wait_for_no_marker(marker, 5), 0);
  EXPECT_EQ(launch::testing::wait_for_no_marker(dir / "work", 5), 0);
}

INSTANTIATE_TEST_SUITE_P(Engines, ProcessHostsWithEngine, kEngines, engine_name);

class NetnsHostsWithEngine : public ::testing::TestWithParam<EngineCase> {};

// Each rank runs in its own host's namespace (its eth0 address) and the collectives cross them:
// with engine mpi, mpirun runs in algo-1's namespace and its daemons start in algo-2's and
// algo-3's through the agent.
TEST_P(NetnsHostsWithEngine, ThreeHostCollectivesJobProducesModelMetricsAndSummary) {
  SKIP_UNLESS_ROOT();
  const EngineCase& e = GetParam();
  TempDir dir;
  write_file(
      dir / "spec.yaml",
      std::string(R"y(
name: collectives-3x1
command: ["sh", "-c", "echo \"world )y") +
          e.world + R"y( at $(ip -o -4 addr show eth0 | awk '{print $4}') custom $CUSTOM_OPTION\" && )y" +
          DTRAIN_COLLECTIVES_DEMO +
          R"y( && echo trained > $SM_MODEL_DIR/model.txt && ip -o -4 addr show eth0 > $SM_OUTPUT_DATA_DIR/address", "algo"]
instance_count: 3
processes_per_host: 1
distribution: {engine: )y" +
          e.engine + R"y(, custom_mpi_options: "-x CUSTOM_OPTION=seen"}
environment: {DTRAIN_LOG_LEVEL: info}
metric_definitions:
  - {name: allreduce_sum, regex: "allreduce Sum \\[([0-9.]+)"}
  - {name: broadcast, regex: "broadcast from rank [0-9]+ -> ([0-9]+)"}
output_path: out
)y");
  pid_t runner = 0;
  auto started = std::chrono::steady_clock::now();
  ChildResult r = run_job(dir / "spec.yaml", {"--hosts", "netns", "--work-dir", dir / "work"}, 90, &runner);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(r.exited) << r.out << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::printf("%s job on 3 netns hosts: %.2f s\n", e.engine.c_str(), seconds);
  for (int rank = 0; rank < 3; ++rank) {
    std::string host = "algo-" + std::to_string(rank + 1);
    std::string tag = "[algo-1] [" + host + ":" + std::to_string(rank) + "]<stdout>:";
    EXPECT_NE(r.out.find(tag + "world 3 rank " + std::to_string(rank) + " at 10.213.0." + std::to_string(rank + 1) +
                         "/24 custom " + e.custom_option + "\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(tag + "rank " + std::to_string(rank) + ": all collectives correct"), std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find(engine_line(rank, host, e.engine_log)), std::string::npos) << r.err;
  }
  std::string out = dir / "out/collectives-3x1";
  auto model = tar_listing(out + "/model.tar.gz");
  EXPECT_NE(std::find(model.begin(), model.end(), "./model.txt"), model.end());
  auto output = tar_listing(out + "/output.tar.gz");
  EXPECT_NE(std::find(output.begin(), output.end(), "./address"), output.end());
  Json summary = read_json(out + "/summary.json");
  EXPECT_EQ(summary["status"], "Completed");
  EXPECT_EQ(summary["hosts_backend"], "netns");
  EXPECT_EQ(summary["hosts"][2]["address"], "10.213.0.3");
  EXPECT_EQ(summary["final_metrics"]["allreduce_sum"], 6.0);
  EXPECT_EQ(summary["final_metrics"]["broadcast"], 4242.0);
  EXPECT_EQ(summary["processes_left_behind"], 0);
  EXPECT_GT(summary["run_seconds"].get<double>(), 0);
  std::set<std::pair<std::string, int>> seen;
  for (const auto& line : lines_in(out + "/metrics.jsonl")) {
    Json m = Json::parse(line);
    seen.insert({m["host"].get<std::string>(), m["rank"].get<int>()});
  }
  EXPECT_EQ(seen, (std::set<std::pair<std::string, int>>{{"algo-1", 0}, {"algo-2", 1}, {"algo-3", 2}}));
  EXPECT_EQ(lines_in(out + "/metrics.jsonl").size(), 6u);  // two definitions x three ranks
  expect_no_network_leftovers(runner);
  expect_no_shm_dirs(runner);
}

TEST_P(NetnsHostsWithEngine, KillingOneHostsRankEndsTheJobNamingTheRank) {
  SKIP_UNLESS_ROOT();
  const EngineCase& e = GetParam();
  TempDir dir;
  const std::string marker = unique_sleep_seconds("3000");
  write_file(dir / "spec.yaml", "name: killed\ncommand: [sh, -c, 'echo ready on $SM_CURRENT_HOST; exec sleep " +
                                    marker + "', algo]\ninstance_count: 3\ndistribution: {engine: " + e.engine +
                                    "}\noutput_path: out\n");
  ChildRunner child({DTRAIN_BINARY, "job", "run", dir / "spec.yaml", "--hosts", "netns", "--work-dir", dir / "work",
                     "--keep-work-dir"});
  pid_t runner = child.pid();
  ASSERT_TRUE(child.wait_for_stdout("]<stdout>:ready on algo-", 60, 3)) << child.out();

  // The rank on algo-2: the sleeper whose environment says so.
  pid_t victim = find_rank_on_host(marker, "algo-2");
  ASSERT_GT(victim, 0);
  auto killed_at = std::chrono::steady_clock::now();
  ::kill(victim, SIGKILL);
  ChildResult r = child.finish(60);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  std::printf("%s job: killed rank to job end: %.2f s\n", e.engine.c_str(), seconds);
  ASSERT_TRUE(r.exited) << r.err;
  EXPECT_EQ(r.exit_code, 137) << r.out << r.err;
  std::string failure = read_file(dir / "work/hosts/algo-1/output/failure");
  EXPECT_EQ(failure, e.killed_rank_failure);
  Json summary = read_json(dir / "out/killed/summary.json");
  EXPECT_EQ(summary["status"], "Failed");
  EXPECT_EQ(summary["failure_reason"], failure);
  EXPECT_EQ(summary["processes_left_behind"], 0);
  EXPECT_EQ(read_file(dir / "work/hosts/algo-3/output/failure"), failure);  // told by the master
  EXPECT_EQ(launch::testing::wait_for_no_marker(marker, 5), 0);
  EXPECT_EQ(launch::testing::wait_for_no_marker(dir / "work", 5), 0);
  expect_no_network_leftovers(runner);
  expect_no_shm_dirs(runner);
}

INSTANTIATE_TEST_SUITE_P(Engines, NetnsHostsWithEngine, kEngines, engine_name);

}  // namespace
}  // namespace dtrain::job
