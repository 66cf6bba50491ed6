// Elastic jobs as users run them: `dtrain run --min-np/--max-np` over three "hosts" that are
// loopback addresses of this machine (127.0.0.1-3: separate hosts to the launcher and the
// runtime, so a lost worker sets its host aside), running tests/runtime/elastic_worker.cc.
// Workers are killed, stopped and added while the job trains; the job's output tells what
// happened, and the worker's counters tell whether any step was lost or counted twice.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kLauncher = DTRAIN_CLI;
const std::string kWorker = ELASTIC_WORKER;
const std::string kThreeHosts = "127.0.0.1:1,127.0.0.2:1,127.0.0.3:1";
constexpr int kSteps = 60;
constexpr int kCommitEvery = 5;

// One `dtrain run` in the background, its output in a file the test reads as it grows.
class ElasticJob {
 public:
  ElasticJob(const fs::path& dir, const std::vector<std::string>& launcher_args,
             const std::vector<std::string>& worker_args, const std::string& timeout_s = "10")
      : log_(dir / "job.log"), tag_("elastic-test-" + std::to_string(std::random_device()())) {
    std::vector<std::string> argv = {"/usr/bin/timeout", "-k", "5", "150", kLauncher, "run"};
    argv.insert(argv.end(), launcher_args.begin(), launcher_args.end());
    argv.insert(argv.end(), {"--", kWorker, "--steps", std::to_string(kSteps), "--commit-every",
                             std::to_string(kCommitEvery), "--step-ms", "40", "--tag", tag_});
    argv.insert(argv.end(), worker_args.begin(), worker_args.end());
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.push_back("DTRAIN_TIMEOUT_S=" + timeout_s);
    std::vector<char*> env;
    for (auto& e : env_strings) env.push_back(e.data());
    env.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid_, argv[0].c_str(), &actions, nullptr, args.data(), env.data()), 0);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ElasticJob() {
    if (pid_ > 0 && exit_code_ < 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  std::string output() const { return testing::read_file(log_); }

  // Waits (bounded) until the output matches `pattern`; returns the match's first group.
  std::string wait_for(const std::string& pattern) const {
    const std::regex re(pattern);
    const auto deadline = Clock::now() + std::chrono::seconds(90);
    while (Clock::now() < deadline) {
      std::smatch m;
      const std::string text = output();
      if (std::regex_search(text, m, re)) return m.size() > 1 ? m[1].str() : m[0].str();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no '" << pattern << "' in the output:\n" << output();
    return "";
  }

  // Sends `signal` to elastic worker `worker` once it has trained a few steps.
  void signal_worker_mid_run(int worker, int signal) const {
    const std::string pid = wait_for("worker " + std::to_string(worker) + " pid ([0-9]+)");
    wait_for("rank [0-9]+/[0-9]+ step 12\n");
    ASSERT_FALSE(pid.empty());
    ASSERT_EQ(::kill(std::stoi(pid), signal), 0);
  }

  int wait() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return exit_code_;
  }

  // Processes of this job still alive (none may outlive the launcher).
  std::string survivors() const {
    return testing::run_job("pgrep -af -- '" + tag_ + "' | grep -v pgrep || true", 10).output;
  }

 private:
  fs::path log_;
  std::string tag_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
};

// The end line of rank 0: steps, the sum of the world sizes over all steps, resets, steps redone.
struct Done {
  long steps = -1, total = -1, resets = -1, redone = -1;
};

Done done_line(const std::string& output) {
  std::smatch m;
  Done d;
  if (std::regex_search(output, m, std::regex(R"(done: steps (\d+) total (\d+) resets (\d+) redone (\d+))"))) {
    d = {std::stol(m[1]), std::stol(m[2]), std::stol(m[3]), std::stol(m[4])};
  }
  return d;
}

// After a 3 -> 2 change resuming at step A, every step counted once: 3 A + 2 (steps - A).
void expect_every_step_counted_once(const std::string& output, int before, int after) {
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(reset: \d+ -> \d+ ranks, round 2, resuming at step (\d+))")))
      << output;
  const long resumed = std::stol(m[1]);
  const Done done = done_line(output);
  EXPECT_EQ(done.steps, kSteps) << output;
  EXPECT_EQ(done.total, before * resumed + after * (kSteps - resumed)) << output;
  EXPECT_EQ(done.resets, 1) << output;
  EXPECT_LE(done.redone, kCommitEvery) << "more than one commit interval redone:\n" << output;
}

TEST(ElasticJob, KilledWorkerLeavesTheOthersTrainingOnTwoRanks) {
  const testing::TempDir dir;
  ElasticJob job(dir.path(), {"--min-np", "2", "--max-np", "3", "-H", kThreeHosts}, {});
  job.signal_worker_mid_run(1, SIGKILL);
  ASSERT_EQ(job.wait(), 0) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("host 127.0.0.2: worker 1 was killed by signal 9 (SIGKILL); the job goes on without it"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("round 2: 2 ranks"), std::string::npos) << out;
  expect_every_step_counted_once(out, 3, 2);
  EXPECT_EQ(job.survivors(), "");
}

// Two ranks per host: a hierarchical world (shared memory inside each host, Gloo across)
// shrinks to hosts of uneven sizes, which the new world handles with the flat allreduce.
TEST(ElasticJob, KilledWorkerSharingItsHostWithAnother) {
  const testing::TempDir dir;
  ElasticJob job(dir.path(), {"--min-np", "2", "--max-np", "4", "-H", "127.0.0.1:2,127.0.0.2:2"}, {});
  job.signal_worker_mid_run(1, SIGKILL);
  ASSERT_EQ(job.wait(), 0) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("round 2: 3 ranks"), std::string::npos) << out;
  expect_every_step_counted_once(out, 4, 3);
  EXPECT_EQ(job.survivors(), "");
}

TEST(ElasticJob, RankZeroIsNotSpecial) {
  const testing::TempDir dir;
  ElasticJob job(dir.path(), {"--min-np", "2", "--max-np", "3", "-H", kThreeHosts}, {});
  job.signal_worker_mid_run(0, SIGKILL);
  ASSERT_EQ(job.wait(), 0) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("round 2: 2 ranks (rank 0 = worker 1 on 127.0.0.2, rank 1 = worker 2 on 127.0.0.3)"),
            std::string::npos)
      << out;
  expect_every_step_counted_once(out, 3, 2);
}

TEST(ElasticJob, StalledWorkerIsTreatedAsLostAfterTheTimeout) {
  const testing::TempDir dir;
  // A short DTRAIN_TIMEOUT_S: the stop is noticed after it, twice (docs/elastic.md).
  ElasticJob job(dir.path(), {"--min-np", "2", "--max-np", "3", "-H", kThreeHosts}, {}, "3");
  job.signal_worker_mid_run(2, SIGSTOP);
  ASSERT_EQ(job.wait(), 0) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("host 127.0.0.3: worker 2 did not reach round 2 within 3 s"), std::string::npos) << out;
  expect_every_step_counted_once(out, 3, 2);
  EXPECT_EQ(job.survivors(), "");
}

TEST(ElasticJob, HostFromTheDiscoveryScriptJoinsAtTheNextCommit) {
  const testing::TempDir dir;
  const fs::path hosts = dir.path() / "hosts", script = dir.path() / "discover.sh", gate = dir.path() / "go";
  std::ofstream(hosts) << "127.0.0.1\n127.0.0.2\n";
  std::ofstream(script) << "#!/bin/sh\ncat '" << hosts.string() << "'\n";
  fs::permissions(script, fs::perms::owner_all);
  // The ranks wait at step 7 until the launcher knows the new worker: a fast world must not
  // finish its steps before the host joins.
  ElasticJob job(dir.path(), {"--min-np", "2", "--max-np", "3", "--host-discovery-script", script.string()},
                 {"--hold-at-step", "7", "--hold-file", gate.string()});
  job.wait_for("rank [0-9]+/2 step 5\n");
  std::ofstream(hosts, std::ios::app) << "127.0.0.3:1\n";
  job.wait_for("1 new worker waits to join at the next commit");
  std::ofstream(gate) << "go\n";
  ASSERT_EQ(job.wait(), 0) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("1 new worker waits to join at the next commit"), std::string::npos) << out;
  EXPECT_NE(out.find("round 2: 3 ranks"), std::string::npos) << out;
  std::smatch m;
  ASSERT_TRUE(
      std::regex_search(out, m, std::regex(R"(reset: 2 -> 3 ranks, round 2, resuming at step (\d+), redoing 0)")))
      << out;
  const long joined = std::stol(m[1]);
  EXPECT_EQ(joined % kCommitEvery, 0) << "joined between commits:\n" << out;
  const Done done = done_line(out);
  EXPECT_EQ(done.steps, kSteps) << out;
  EXPECT_EQ(done.total, 2 * joined + 3 * (kSteps - joined)) << out;
}

TEST(ElasticJob, BelowMinNpForLongerThanTheTimeoutFailsWithOneLine) {
  const testing::TempDir dir;
  std::set<std::string> segments_before;
  for (const auto& e : fs::directory_iterator("/dev/shm")) segments_before.insert(e.path().filename());
  ElasticJob job(dir.path(), {"--min-np", "3", "--max-np", "3", "--elastic-timeout", "2", "-H", kThreeHosts}, {});
  job.signal_worker_mid_run(1, SIGKILL);
  EXPECT_EQ(job.wait(), 1) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("dtrain run: elastic: 2 workers alive, below --min-np 3 for more than 2 s (lost: host 127.0.0.2: "
                     "worker 1 was killed by signal 9 (SIGKILL))"),
            std::string::npos)
      << out;
  EXPECT_EQ(job.survivors(), "");
  for (const auto& e : fs::directory_iterator("/dev/shm")) {
    const std::string name = e.path().filename();
    EXPECT_TRUE(segments_before.count(name) || name.find("dtrain") == std::string::npos) << "left behind: " << name;
  }
}

TEST(ElasticJob, TheProgramsOwnFailureEndsTheJobWithoutAReset) {
  const testing::TempDir dir;
  ElasticJob job(dir.path(), {"--min-np", "2", "--max-np", "3", "-H", kThreeHosts}, {"--fail-at", "20"});
  EXPECT_EQ(job.wait(), 1) << job.output();
  const std::string out = job.output();
  EXPECT_NE(out.find("the program's own failure at step 20"), std::string::npos) << out;
  EXPECT_NE(out.find("exited with status 1"), std::string::npos) << out;
  EXPECT_EQ(out.find("round 2"), std::string::npos) << "an error of the program must not reset the world:\n" << out;
  EXPECT_EQ(job.survivors(), "");
}

TEST(ElasticJob, UsageErrors) {
  const testing::TempDir dir;
  auto run = [&](const std::string& args) {
    return testing::run_capturing(kLauncher + " run " + args + " -- true", dir.path().string());
  };
  auto o = run("--min-np 3 --max-np 2");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--max-np 2 is below --min-np 3"), std::string::npos) << o.err;
  o = run("--min-np 2 --mpi -np 2");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("cannot be combined with --mpi"), std::string::npos) << o.err;
  o = run("--reset-limit 3 -np 2");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("need --min-np or --max-np"), std::string::npos) << o.err;
}

}  // namespace
}  // namespace dtrain
