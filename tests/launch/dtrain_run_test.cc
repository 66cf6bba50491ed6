// End-to-end tests of `dtrain run` through the built binary.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/launch/child_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain::launch {
namespace {

using testing::ChildResult;
using testing::ChildRunner;
using testing::lines_of;

// A sleep duration no other process on the machine has in its command line:
// "60.<pid><n>" sleeps about a minute and doubles as a marker to look for in
// /proc/*/cmdline afterwards.
std::string unique_sleep() {
  static std::atomic<int> counter{1};
  return "60." + std::to_string(::getpid()) + std::to_string(counter++);
}

std::vector<std::string> dtrain_run(std::vector<std::string> args) {
  args.insert(args.begin(), {DTRAIN_BINARY, "run"});
  return args;
}

ChildResult run_dtrain(std::vector<std::string> args, double timeout_s = 60, std::vector<std::string> extra_env = {}) {
  ChildRunner child(dtrain_run(std::move(args)), std::move(extra_env));
  return child.finish(timeout_s);
}

bool has_line(const std::string& text, const std::string& line) {
  auto lines = lines_of(text);
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DtrainRun, RelaysPrefixedLinesFromEveryRank) {
  auto r = run_dtrain({"-np", "2", "sh", "-c", "echo hi; echo oops >&2; printf partial"});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"[0]<stdout>:hi", "[1]<stdout>:hi", "[0]<stdout>:partial", "[1]<stdout>:partial"}) {
    EXPECT_TRUE(has_line(r.out, line)) << line << " missing from:\n" << r.out;
  }
  EXPECT_TRUE(has_line(r.err, "[0]<stderr>:oops")) << r.err;
  EXPECT_TRUE(has_line(r.err, "[1]<stderr>:oops")) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), 4u) << r.out;
}

TEST(DtrainRun, AcceptsTheCommandAfterDoubleDash) {
  auto r = run_dtrain({"-np", "1", "--", "sh", "-c", "echo $0 $1", "-np", "--bogus"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:-np --bogus\n");
}

TEST(DtrainRun, GivesEachRankItsPlacementAndTheJobsRendezvous) {
  auto r = run_dtrain({"-np", "3", "-H", "localhost:1,127.0.0.1:4", "sh", "-c",
                       "echo env $DTRAIN_RANK $DTRAIN_SIZE $DTRAIN_LOCAL_RANK $DTRAIN_LOCAL_SIZE "
                       "$DTRAIN_CROSS_RANK $DTRAIN_CROSS_SIZE $DTRAIN_HOSTNAME $DTRAIN_RENDEZVOUS_ADDR "
                       "$DTRAIN_RENDEZVOUS_PORT $DTRAIN_JOB_TOKEN $DTRAIN_JOB_ID ${DTRAIN_IFACE-unset} "
                       "${DTRAIN_CYCLE_TIME_MS-unset} ${DTRAIN_LOG_LEVEL-unset} $USER_VAR"},
                      60, {"DTRAIN_CYCLE_TIME_MS=7", "USER_VAR=kept"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::regex pattern(
      R"(\[(\d)\]<stdout>:env (\d) 3 (\d) (\d) (\d) 2 (\S+) 127\.0\.0\.1 (\d+) ([0-9a-f]{32}) ([0-9a-f]{8}) unset 7 unset kept)");
  std::map<int, std::smatch> by_rank;
  std::set<std::string> tokens, ports;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  for (const auto& line : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, pattern)) << line;
    EXPECT_EQ(m[1], m[2]);
    tokens.insert(m[8].str() + m[9].str());
    ports.insert(m[7]);
    by_rank[std::stoi(m[2])] = m;
  }
  EXPECT_EQ(tokens.size(), 1u);  // one job token and id for all ranks
  EXPECT_EQ(ports.size(), 1u);
  // local_rank local_size cross_rank host: rank 0 alone on localhost (host 0),
  // ranks 1 and 2 share 127.0.0.1 (host 1).
  auto placement = [&](int rank) {
    const auto& m = by_rank[rank];
    return m[3].str() + " " + m[4].str() + " " + m[5].str() + " " + m[6].str();
  };
  EXPECT_EQ(placement(0), "0 1 0 localhost");
  EXPECT_EQ(placement(1), "0 2 1 127.0.0.1");
  EXPECT_EQ(placement(2), "1 2 1 127.0.0.1");
}

TEST(DtrainRun, ExportsKnobsFromFlags) {
  auto r = run_dtrain(
      {"-np", "1", "--network-interface", "lo", "--timeline-filename", "/tmp/tl.json", "--fusion-threshold-mb", "2",
       "--cycle-time-ms", "3.5", "--stall-warning-s", "60", "--stall-shutdown-s", "120", "--verbose", "sh", "-c",
       "echo $DTRAIN_IFACE $DTRAIN_TIMELINE $DTRAIN_FUSION_THRESHOLD "
       "$DTRAIN_CYCLE_TIME_MS $DTRAIN_STALL_WARNING_S $DTRAIN_STALL_SHUTDOWN_S "
       "$DTRAIN_LOG_LEVEL"},
      60, {"DTRAIN_CYCLE_TIME_MS=7"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:lo /tmp/tl.json 2097152 3.5 60 120 debug\n");
}

TEST(DtrainRun, WorkersRendezvousThroughTheStore) {
  auto r = run_dtrain({"-np", "3", "--start-timeout", "20", DTRAIN_TEST_WORKER, "exchange"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    std::string line = "[" + std::to_string(rank) + "]<stdout>:rank " + std::to_string(rank) +
                       " saw [hello from 0][hello from 1][hello from 2]";
    EXPECT_TRUE(has_line(r.out, line)) << line << " missing from:\n" << r.out;
  }
}

TEST(DtrainRun, FirstFailingRankStopsTheOthers) {
  std::string marker = unique_sleep();
  auto r = run_dtrain({"-np", "3", "--kill-grace-s", "2", "sh", "-c",
                       "if [ $DTRAIN_RANK = 1 ]; then sleep 0.3; exit 3; fi; sleep " + marker + "; echo not reached"},
                      30);
  ASSERT_FALSE(r.timed_out);  // the others sleep for an hour: they were stopped, not awaited
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "dtrain run: rank 1 (host localhost) exited with status 3\n");
  EXPECT_EQ(r.out.find("not reached"), std::string::npos);
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

TEST(DtrainRun, NamesTheSignalThatKilledAWorker) {
  std::string marker = unique_sleep();
  auto r = run_dtrain(
      {"-np", "2", "--kill-grace-s", "1", "sh", "-c", "if [ $DTRAIN_RANK = 1 ]; then kill -9 $$; fi; sleep " + marker},
      30);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "dtrain run: rank 1 (host localhost) was killed by signal 9 (SIGKILL)\n");
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

TEST(DtrainRun, SigtermToTheLauncherReachesEveryWorker) {
  std::string marker = unique_sleep();
  ChildRunner launcher(dtrain_run(
      {"-np", "3", "--start-timeout", "0", "sh", "-c", "echo started; sleep " + marker + "; echo not reached"}));
  ASSERT_TRUE(launcher.wait_for_stdout("<stdout>:started", 20, 3)) << launcher.out();
  launcher.signal(SIGTERM);
  auto r = launcher.finish(20);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_EQ(r.out.find("not reached"), std::string::npos);
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

// A launcher killed outright (SIGKILL: the OOM killer, a scheduler) cannot stop anyone; the
// workers must still not outlive it, nor what they started: here each worker is a shell
// waiting for a sleeper of its own, which the worker's death alone would leave running.
TEST(DtrainRun, WorkersAndWhatTheyStartedDieWithALauncherKilledBySigkill) {
  std::string marker = unique_sleep();
  ChildRunner launcher(dtrain_run({"-np", "2", "--start-timeout", "0", "--kill-grace-s", "1", "sh", "-c",
                                   "sleep " + marker + " & echo started; wait"}));
  ASSERT_TRUE(launcher.wait_for_stdout("<stdout>:started", 20, 2)) << launcher.out();
  ASSERT_GE(testing::processes_with_marker(marker), 4);  // 2 shells, 2 sleepers (and the launcher)
  launcher.signal(SIGKILL);
  auto r = launcher.finish(20);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_EQ(testing::wait_for_no_marker(marker, 20), 0);
}

TEST(DtrainRun, WorkersIgnoringTheSignalAreKilledAfterTheGrace) {
  std::string marker = unique_sleep();
  ChildRunner launcher(dtrain_run({"-np", "2", "--kill-grace-s", "1", "--start-timeout", "0", "sh", "-c",
                                   "trap '' INT TERM; echo started; sleep " + marker}));
  ASSERT_TRUE(launcher.wait_for_stdout("<stdout>:started", 20, 2)) << launcher.out();
  launcher.signal(SIGINT);
  auto r = launcher.finish(20);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGINT);
  EXPECT_GE(r.seconds, 1);
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

TEST(DtrainRun, StartTimeoutFailsWorkersThatNeverReachRendezvous) {
  std::string marker = unique_sleep();
  auto r = run_dtrain({"-np", "2", "--start-timeout", "2", "--kill-grace-s", "1", "sleep", marker}, 30);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_GE(r.seconds, 2);  // and the message below says the deadline, not something else, ended it
  EXPECT_EQ(r.err, "dtrain run: rank 0 (host localhost) did not reach rendezvous within 2 s\n");
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

TEST(DtrainRun, StartTimeoutSparesReadyWorkersAndThoseThatAlreadyFinished) {
  auto r = run_dtrain(
      {"-np", "2", "--start-timeout", "1", "sh", "-c",
       "if [ $DTRAIN_RANK = 0 ]; then exit 0; fi; exec " + std::string(DTRAIN_TEST_WORKER) + " ready-then-sleep 2.5"},
      30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(r.seconds, 2.5);
}

TEST(DtrainRun, ReportsACommandThatCannotBeExecuted) {
  auto r = run_dtrain({"-np", "2", "dtrain-no-such-command-xyz", "arg"}, 30);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "dtrain run: rank 0 (host localhost): cannot execute 'dtrain-no-such-command-xyz': "
            "No such file or directory\n");
}

TEST(DtrainRun, WritesRawOutputFiles) {
  const dtrain::testing::TempDir temp;
  const std::string dir = temp / "output";
  auto r = run_dtrain({"--output-filename", dir, "-np", "2", "sh", "-c",
                       "printf 'line\\r\\n\\377tail'; printf \"err $DTRAIN_RANK\" >&2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    std::string base = dir + "/rank." + std::to_string(rank);
    EXPECT_EQ(read_file(base + "/stdout"), "line\r\n\xfftail");
    EXPECT_EQ(read_file(base + "/stderr"), "err " + std::to_string(rank));
  }
  EXPECT_TRUE(has_line(r.out, "[1]<stdout>:line\r"));
  EXPECT_TRUE(has_line(r.out, "[1]<stdout>:\xfftail"));
}

// --rank-status-file: what the dashboard shows of each rank, as the launcher saw it.
TEST(DtrainRun, RankStatusFileSaysHowEachRankRanAndEnded) {
  const dtrain::testing::TempDir temp;
  const std::string file = temp / "ranks.json";
  const std::string done = temp / "rank-2-done";
  // Rank 0 exits at once, rank 2 reaches rendezvous and exits, then rank 1 is killed.
  auto r = run_dtrain(
      {"--rank-status-file", file, "-np", "3", "--kill-grace-s", "1", "--start-timeout", "20", "sh", "-c",
       "case $DTRAIN_RANK in 0) exit 0;; 2) " + std::string(DTRAIN_TEST_WORKER) + " ready-then-sleep 0 && touch " +
           done + "; exit 0;; esac; while [ ! -e " + done + " ]; do sleep 0.05; done; kill -9 $$"},
      30);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto ranks = nlohmann::json::parse(read_file(file))["ranks"];
  ASSERT_EQ(ranks.size(), 3u) << ranks;
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(ranks[rank]["rank"], rank);
    EXPECT_EQ(ranks[rank]["host"], "localhost");
    EXPECT_GT(ranks[rank]["pid"].get<int>(), 0);
  }
  EXPECT_EQ(ranks[0]["state"], "exited");
  EXPECT_EQ(ranks[0]["exit_code"], 0);
  EXPECT_EQ(ranks[0]["reached_rendezvous"], false);  // a shell, not the runtime
  EXPECT_EQ(ranks[1]["state"], "killed");
  EXPECT_EQ(ranks[1]["signal"], 9);
  EXPECT_EQ(ranks[2]["state"], "exited");
  EXPECT_EQ(ranks[2]["reached_rendezvous"], true);
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
}

TEST(DtrainRun, LongLinesArriveWhole) {
  auto r = run_dtrain({"-np", "1", "sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo"});
  EXPECT_EQ(r.exit_code, 0);
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 4u);  // 64 KiB + 64 KiB + 64 KiB + 3392 bytes
  std::string joined;
  for (const auto& l : lines) {
    ASSERT_TRUE(l.starts_with("[0]<stdout>:"));
    joined += l.substr(12);
  }
  EXPECT_EQ(joined, std::string(200000, 'x'));
}

struct UsageCase {
  std::string name;
  std::vector<std::string> args;
  std::string message;  // expected to appear in the one line
};

void PrintTo(const UsageCase& c, std::ostream* os) { *os << c.name; }

class DtrainRunUsage : public ::testing::TestWithParam<UsageCase> {};

TEST_P(DtrainRunUsage, ExitsTwoWithOneLine) {
  auto r = run_dtrain(GetParam().args, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.starts_with("dtrain run: ")) << r.err;
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_NE(r.err.find(GetParam().message), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

// Written when the test cases are registered (every run of this binary, listing included),
// and removed when the process exits, so runs leave nothing behind in the temp directory.
struct BadHostfile {
  dtrain::testing::TempDir dir;
  std::string path = dir / "hostfile";
  BadHostfile() { std::ofstream(path) << "# ok\nlocalhost slots=2\nnode2 slots=two\n"; }
};

std::string bad_hostfile() {
  static const BadHostfile file;
  return file.path;
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, DtrainRunUsage,
    ::testing::Values(
        UsageCase{"MissingSlots", {"-H", "a:", "true"}, "-H: bad slot count in 'a:'"},
        UsageCase{"ZeroSlots", {"-H", "a:0", "true"}, "'a:0'"},
        UsageCase{"NonNumericSlots", {"-H", "a:x", "true"}, "'a:x'"},
        UsageCase{"EmptyHostList", {"-H", "", "true"}, "-H: empty host list"},
        UsageCase{
            "TooManyRanks", {"-np", "5", "-H", "localhost:4", "true"}, "-np 5 but only 4 slots on hosts localhost:4"},
        UsageCase{"ZeroRanks", {"-np", "0", "true"}, "-np must be at least 1, got 0"},
        UsageCase{"NonNumericNp", {"-np", "x", "true"}, "--np"},
        UsageCase{"UnknownFlag", {"--bogus", "true"}, "unknown option '--bogus'"},
        UsageCase{"MissingCommand", {"-np", "2"}, "missing command"},
        UsageCase{"NothingAfterDoubleDash", {"-np", "2", "--"}, "missing command"},
        UsageCase{"MissingHostfile",
                  {"--hostfile", "/nonexistent/hosts", "true"},
                  "cannot read hostfile '/nonexistent/hosts'"},
        UsageCase{"BadHostfileLine", {"--hostfile", bad_hostfile(), "true"}, " line 3: bad slot count"},
        UsageCase{
            "BothHostListAndHostfile", {"-H", "localhost:1", "--hostfile", "/x", "true"}, "either -H or --hostfile"},
        UsageCase{"NegativeStartTimeout", {"--start-timeout", "-1", "true"}, "--start-timeout"},
        UsageCase{"PsModeWithoutPs", {"--ps-mode", "sync", "true"}, "need --ps"},
        UsageCase{"UnknownPsMode",
                  {"--ps", "--ps-mode", "eventual", "true"},
                  "--ps-mode must be async or sync, got 'eventual'"},
        UsageCase{"NegativePsStaleness", {"--ps", "--ps-staleness", "-2", "true"}, "--ps-staleness must be >= 0"},
        UsageCase{"PsWithMpi", {"--ps", "--mpi", "true"}, "--ps"}),
    [](const ::testing::TestParamInfo<UsageCase>& info) { return info.param.name; });

// --ps: one parameter server per host beside the workers (tests/torch trains through them).
TEST(DtrainRunWithParameterServers, StopsTheServersOnceTheWorkersAreDone) {
  auto r = run_dtrain({"--ps", "-np", "2", "sh", "-c", "sleep 0.5"}, 60);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[ps0]<stdout>:dtrain ps-server 0: serving on 127.0.0.1:"), std::string::npos) << r.out;
}

TEST(DtrainRunWithParameterServers, AWorkerOtherThanTheChiefMayFail) {
  auto r = run_dtrain({"--ps", "-np", "3", "sh", "-c", "test $DTRAIN_RANK != 2 || exit 3; sleep 1"}, 60);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dtrain run: rank 2 (host localhost) exited with status 3; the other workers go on without it"),
            std::string::npos)
      << r.err;
}

TEST(DtrainRunWithParameterServers, TheChiefFailingFailsTheJob) {
  auto r = run_dtrain({"--ps", "-np", "2", "sh", "-c", "test $DTRAIN_RANK != 0 || exit 4; sleep 30"}, 60);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("dtrain run: rank 0 (host localhost) exited with status 4"), std::string::npos) << r.err;
}

TEST(DtrainRunWithParameterServers, AServerThatDiesEndsTheJobNamingIt) {
  const std::string marker = unique_sleep();
  // The worker kills its sibling, the server (both are the launcher's children; the server's
  // process name is the launcher's, "dtrain", the worker's "sh"), then waits.
  auto r = run_dtrain({"--ps", "-np", "1", "sh", "-c", "sleep 1; pkill -KILL -P $PPID -x dtrain; sleep " + marker}, 60);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(
      r.err.find("dtrain run: ps0 (host localhost) was killed by signal 9 (SIGKILL) while the workers were training"),
      std::string::npos)
      << r.err;
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0) << "the worker was stopped";
}

TEST(DtrainRun, UnreachableHostFailsBeforeAnythingStarts) {
  auto r = run_dtrain({"-H", "localhost:1,no-such-host.invalid:1", "-np", "2", "echo", "ran"}, 60);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(lines_of(r.err).size(), 1u) << r.err;
  EXPECT_TRUE(r.err.starts_with("dtrain run: cannot reach host no-such-host.invalid")) << r.err;
  EXPECT_EQ(r.out, "");
}

// No sshd here: a stand-in `ssh` first in PATH skips the options, takes the
// host, and runs the remote command string with sh as a remote login shell
// would. Everything else — the reachability probe, the remote wrapper script,
// placement across hosts, the rendezvous address other hosts get — is real.
class DtrainRunOverSsh : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ofstream script(dir_ + "/ssh");
    script << "#!/bin/sh\n"
              "while [ $# -gt 0 ]; do\n"
              "  case \"$1\" in -o|-p|-i) shift 2 ;; -*) shift ;; *) break ;; esac\n"
              "done\n"
              "echo \"$1\" >> "
           << dir_
           << "/hosts-contacted\n"
              "shift\n"
              "exec sh -c \"$*\"\n";
    script.close();
    std::filesystem::permissions(dir_ + "/ssh", std::filesystem::perms::owner_all);
  }

  ChildResult run(std::vector<std::string> args, double timeout_s = 60) {
    return run_dtrain(std::move(args), timeout_s, {"PATH=" + dir_ + ":" + std::getenv("PATH")});
  }

  const dtrain::testing::TempDir temp_;
  const std::string dir_ = temp_.path().string();
};

TEST_F(DtrainRunOverSsh, PlacesRanksOnRemoteHostsAndAdvertisesAReachableAddress) {
  auto r = run({"-H", "fakehost-a:2,fakehost-b:2", "-np", "3", "sh", "-c",
                "echo $DTRAIN_RANK $DTRAIN_LOCAL_RANK $DTRAIN_CROSS_RANK $DTRAIN_HOSTNAME "
                "$DTRAIN_RENDEZVOUS_ADDR; pwd"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::regex line(R"(\[(\d)\]<stdout>:(\d) (\d) (\d) (fakehost-[ab]) (\d+\.\d+\.\d+\.\d+))");
  std::set<std::string> seen;
  for (const auto& l : lines_of(r.out)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) {
      EXPECT_EQ(l.substr(l.find(':') + 1), std::filesystem::current_path().string());
      continue;
    }
    EXPECT_EQ(m[1], m[2]);
    seen.insert(m[2].str() + " " + m[3].str() + " " + m[4].str() + " " + m[5].str());
  }
  EXPECT_EQ(seen, (std::set<std::string>{"0 0 0 fakehost-a", "1 1 0 fakehost-a", "2 0 1 fakehost-b"}));
  // Probed once per host, then one connection per rank.
  auto contacted = lines_of(read_file(dir_ + "/hosts-contacted"));
  EXPECT_EQ(contacted.size(), 5u);
}

TEST_F(DtrainRunOverSsh, RemoteWorkersRendezvousThroughTheStore) {
  auto r = run({"-H", "fakehost-a:1,fakehost-b:1", "--network-interface", "lo", DTRAIN_TEST_WORKER, "exchange"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has_line(r.out, "[1]<stdout>:rank 1 saw [hello from 0][hello from 1]")) << r.out;
}

TEST_F(DtrainRunOverSsh, RemoteFailureStopsEveryRank) {
  std::string marker = unique_sleep();
  auto r = run({"-H", "fakehost-a:1,fakehost-b:2", "--kill-grace-s", "1", "sh", "-c",
                "if [ $DTRAIN_RANK = 2 ]; then sleep 0.3; exit 5; fi; sleep " + marker},
               30);
  EXPECT_EQ(r.exit_code, 1);
  // The remote shells may report their killed jobs ("[1]<stderr>:Terminated");
  // the launcher's own verdict is one last line.
  auto lines = lines_of(r.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "dtrain run: rank 2 (host fakehost-b) exited with status 5");
  EXPECT_EQ(
      std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.starts_with("dtrain run:"); }), 1);
  EXPECT_EQ(testing::wait_for_no_marker(marker, 5), 0);
}

TEST_F(DtrainRunOverSsh, UnknownInterfaceIsAUsageError) {
  auto r = run({"-H", "fakehost-a:1", "--network-interface", "nosuchif0", "true"}, 30);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--network-interface nosuchif0"), std::string::npos) << r.err;
}

TEST(DtrainRun, SlurmOutsideAnAllocationOrWithHostsIsAUsageError) {
  auto outside = run_dtrain({"--slurm", "true"}, 30);
  EXPECT_EQ(outside.exit_code, 2);
  EXPECT_NE(outside.err.find("--slurm runs inside a Slurm allocation"), std::string::npos) << outside.err;
  auto hosts = run_dtrain({"--slurm", "-H", "a:1", "true"}, 30, {"SLURM_JOB_ID=1", "SLURM_JOB_NODELIST=a"});
  EXPECT_EQ(hosts.exit_code, 2);
  EXPECT_NE(hosts.err.find("drop -H/--hostfile"), std::string::npos) << hosts.err;
}

TEST(DtrainCli, RequiresASubcommand) {
  ChildRunner child({DTRAIN_BINARY});
  auto r = child.finish(10);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.err.starts_with("dtrain: ")) << r.err;
}

TEST(DtrainCli, RunHelpExitsZero) {
  ChildRunner child({DTRAIN_BINARY, "run", "--help"});
  auto r = child.finish(10);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--start-timeout"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dtrain::launch
