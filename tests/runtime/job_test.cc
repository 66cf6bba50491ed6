// Whole jobs through the launcher: what a user sees in the output and files.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain {
namespace {

using testing::run_job;

const std::string kLauncher = DTRAIN_CLI;
const std::string kCollectives = COLLECTIVES_MP_TEST;
const std::string kHangWorker = HANG_WORKER;

TEST(Job, TimelineIsValidChromeTraceWithNegotiationAndFusion) {
  const testing::TempDir dir;
  const std::filesystem::path path = dir.path() / "timeline.json";
  // Gloo alone packs fused tensors into the fusion buffer (the shared-memory path reduces
  // them in place), so the timeline shows the packing too.
  const auto result = run_job("env DTRAIN_SHM=0 " + kLauncher + " run -np 2 --timeline-filename " + path.string() +
                              " -- " + kCollectives + " --gtest_filter=Allreduce.ManyAsync*");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream in(path);
  nlohmann::json events;
  ASSERT_NO_THROW(events = nlohmann::json::parse(in)) << "timeline is not valid JSON";
  std::set<std::string> activities, tensors;
  for (const auto& e : events) {
    if (e.contains("name") && e["ph"] != "M") activities.insert(e["name"].get<std::string>());
    if (e["ph"] == "M") tensors.insert(e["args"]["name"].get<std::string>());
  }
  for (const char* expected : {"NEGOTIATE_ALLREDUCE", "rank 0 ready", "rank 1 ready", "QUEUE", "ALLREDUCE",
                               "MEMCPY_IN_FUSION_BUFFER", "COMMUNICATE", "MEMCPY_OUT_FUSION_BUFFER"}) {
    EXPECT_TRUE(activities.contains(expected)) << "no '" << expected << "' event";
  }
  EXPECT_TRUE(tensors.contains("fused.0"));
  EXPECT_TRUE(tensors.contains("fused.299"));
}

TEST(Job, AutotuneSamplesEveryCandidateFixesOneAndKeepsResultsExact) {
  const testing::TempDir dir;
  const std::filesystem::path log = dir.path() / "autotune.csv";
  const auto result = run_job("env DTRAIN_AUTOTUNE_STEPS_PER_SAMPLE=1 DTRAIN_AUTOTUNE_WARMUP_SAMPLES=1 " + kLauncher +
                              " run -np 2 --autotune --autotune-log-file " + log.string() + " -- " + kCollectives +
                              " --gtest_filter=Allreduce.RepeatedStepsOfManyTensorsStayCorrect");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::ifstream in(log);
  std::string header;
  std::getline(in, header);
  EXPECT_EQ(header, "sample,phase,fusion_threshold_bytes,cycle_time_ms,steps,bytes,seconds,bytes_per_s");
  std::map<std::string, int> phases;
  std::set<std::string> thresholds, cycle_times;
  std::string final_row;
  for (std::string row; std::getline(in, row);) {
    std::vector<std::string> fields;
    std::stringstream columns(row);
    for (std::string f; std::getline(columns, f, ',');) fields.push_back(f);
    ASSERT_GE(fields.size(), 4u) << row;
    ++phases[fields[1]];
    if (fields[1] == "fusion") thresholds.insert(fields[2]);
    if (fields[1] == "cycle") cycle_times.insert(fields[3]);
    if (fields[1] == "final") final_row = row;
  }
  EXPECT_EQ(phases["warmup"], 1);
  EXPECT_EQ(thresholds.size(), 6u) << "every fusion threshold sampled";
  EXPECT_EQ(cycle_times.size(), 5u) << "every cycle time sampled";
  EXPECT_EQ(phases["final"], 1) << "the search ended within the run's 60 steps";
}

struct Trace {
  std::set<std::string> tensors;
  int cycle_marks = 0;
  bool spans_matched = true;  // on every track, no end before its begin and none left open
};

Trace read_trace(const std::filesystem::path& path) {
  std::ifstream in(path);
  const nlohmann::json events = nlohmann::json::parse(in);  // throws unless the file is valid JSON
  Trace trace;
  std::map<int, int> depth;
  for (const auto& e : events) {
    if (e["ph"] == "M") trace.tensors.insert(e["args"]["name"].get<std::string>());
    if (e.contains("name") && e["name"] == "CYCLE_START") ++trace.cycle_marks;
    if (e["ph"] == "B") ++depth[e["pid"].get<int>()];
    if (e["ph"] == "E" && --depth[e["pid"].get<int>()] < 0) trace.spans_matched = false;
  }
  for (const auto& [track, open] : depth) trace.spans_matched = trace.spans_matched && open == 0;
  return trace;
}

TEST(Job, TimelineRecordsOnlyBetweenStartAndStopWithCycleMarksWhenAsked) {
  const testing::TempDir dir;
  const auto result = run_job("env DTRAIN_TEST_TIMELINE_DIR=" + dir.path().string() + " " + kLauncher +
                              " run -np 2 -- " + kCollectives + " --gtest_filter=JobOnly.TimelineStarted*");
  ASSERT_EQ(result.exit_code, 0) << result.output;

  const Trace first = read_trace(dir.path() / "first.json");
  EXPECT_TRUE(first.tensors.contains("straddle"));
  EXPECT_TRUE(first.tensors.contains("during.first"));
  EXPECT_FALSE(first.tensors.contains("before.timeline"));
  EXPECT_FALSE(first.tensors.contains("during.second"));
  EXPECT_GE(first.cycle_marks, 3);  // at least one per allreduce of during.first
  EXPECT_TRUE(first.spans_matched);

  const Trace second = read_trace(dir.path() / "second.json");
  EXPECT_TRUE(second.tensors.contains("during.second"));
  EXPECT_FALSE(second.tensors.contains("during.first"));
  EXPECT_FALSE(second.tensors.contains("after.timeline"));
  EXPECT_EQ(second.cycle_marks, 0);
  EXPECT_TRUE(second.spans_matched);
}

TEST(Job, StallWarningNamesTheMissingRankAndTheJobProceeds) {
  const auto result = run_job(kLauncher + " run -np 2 --stall-warning-s 1 -- " + kCollectives +
                              " --gtest_filter=JobOnly.WarningThenBothProceed");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("allreduce 'late.tensor' waiting 1 s: submitted by ranks [0], missing on ranks [1]"),
            std::string::npos)
      << result.output;
}

TEST(Job, StallWarningNamesTheMissingRankOfACachedTensor) {
  const auto result = run_job(kLauncher + " run -np 2 --stall-warning-s 1 -- " + kCollectives +
                              " --gtest_filter=JobOnly.CachedTensorWarningThenBothProceed");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(
      result.output.find("allreduce 'late.cached.tensor' waiting 1 s: submitted by ranks [0], missing on ranks [1]"),
      std::string::npos)
      << result.output;
}

TEST(Job, StallShutdownFailsEveryRankWithTheReason) {
  const auto result = run_job(kLauncher + " run -np 3 --stall-warning-s 1 --stall-shutdown-s 2 -- " + kCollectives +
                              " --gtest_filter=JobOnly.ShutdownFailsEveryRankNamingTheMissingRank");
  EXPECT_EQ(result.exit_code, 0) << result.output;  // every rank saw the error it expected
  EXPECT_NE(result.output.find("DTRAIN_STALL_SHUTDOWN_S"), std::string::npos) << result.output;
}

// The flight recorder's verdict on a hang ended by the stall shutdown: the launcher prints
// one paragraph from every rank's record, naming the rank to look at.
std::string hang_verdict_of(const std::string& way) {
  const auto result =
      run_job(kLauncher + " run -np 2 --stall-warning-s 1 --stall-shutdown-s 2 -- " + kHangWorker + " " + way);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_EQ(result.output.find("dtrain flight record: "), std::string::npos) << "the records are the launcher's";
  const auto at = result.output.find("dtrain run: Flight records of 2 of 2 ranks");
  EXPECT_NE(at, std::string::npos) << result.output;
  return at == std::string::npos ? result.output : result.output.substr(at, result.output.find('\n', at) - at);
}

TEST(Job, HangVerdictNamesTheRanksThatPartedWaysAndWhere) {
  const std::string verdict = hang_verdict_of("skip");
  EXPECT_NE(verdict.find("Allreduce 'step.b' is awaited by rank 0"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("was never submitted by rank 1"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("Ranks 0 and 1 wait on each other after allreduce 'step.a': rank 0 called 'step.b' where "
                         "rank 1 called 'step.c'"),
            std::string::npos)
      << verdict;
  EXPECT_NE(verdict.find("Look at ranks 0, 1 first."), std::string::npos) << verdict;
}

TEST(Job, HangVerdictNamesTheRankInItsOwnCode) {
  const std::string verdict = hang_verdict_of("user-code");
  EXPECT_NE(verdict.find("Rank 1 has nothing in flight: its last collective, allreduce 'step.a', finished"),
            std::string::npos)
      << verdict;
  EXPECT_NE(verdict.find("Look at rank 1 first."), std::string::npos) << verdict;
}

TEST(Job, HangVerdictNamesCollectivesCalledInDifferentOrders) {
  const std::string verdict = hang_verdict_of("order");
  EXPECT_NE(verdict.find("Ranks 0 and 1 wait on each other: rank 0 called 'x' where rank 1 called 'y'"),
            std::string::npos)
      << verdict;
}

// SIGUSR1 to the launcher: the ranks write their records, the launcher prints the verdict and
// the job goes on (no stall shutdown here). Each rank also writes its whole ring to the
// directory DTRAIN_FLIGHT_RECORDER_DIR names.
TEST(Job, Sigusr1ToTheLauncherPrintsTheVerdictAndTheJobGoesOn) {
  testing::TempDir dir;
  const std::string d = dir.path().string();
  const auto result = run_job("sh -c 'DTRAIN_FLIGHT_RECORDER_DIR=" + d + "/records " + kLauncher + " run -np 2 -- " +
                              kHangWorker + " signal " + d + " & launcher=$!; while [ ! -e " + d +
                              "/waiting ]; do sleep 0.1; done; sleep 1; kill -USR1 $launcher; sleep 4; touch " + d +
                              "/release; wait $launcher'");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("dtrain run: caught SIGUSR1, asking 2 ranks for their flight records"),
            std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("(written on: SIGUSR1). Allreduce 'step.b' is awaited by rank 0"), std::string::npos)
      << result.output;
  EXPECT_NE(result.output.find("Rank 1 has nothing in flight"), std::string::npos) << result.output;
  for (const char* file : {"rank0.json", "rank1.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "records" / file)) << file;
  }

  // The same verdict afterwards from the files, as for a job dtrain run did not supervise.
  const auto offline = run_job(kLauncher + " flight-record " + d + "/records");
  EXPECT_EQ(offline.exit_code, 0) << offline.output;
  EXPECT_NE(offline.output.find("Flight records of 2 of 2 ranks (written on: SIGUSR1). Allreduce 'step.b' is "
                                "awaited by rank 0"),
            std::string::npos)
      << offline.output;
  // And from a log of the ranks' stderr with a launcher's prefixes (mpirun's here).
  std::ofstream log(dir.path() / "job.log");
  for (const char* file : {"rank0.json", "rank1.json"}) {
    std::ifstream record(dir.path() / "records" / file);
    std::string json;
    std::getline(record, json);
    log << "[1," << file[4] << "]<stderr>:dtrain flight record: " << json << "\n";
  }
  log << "[1,0]<stdout>:an ordinary line\n";
  log.close();
  const auto from_log = run_job(kLauncher + " flight-record " + d + "/job.log");
  EXPECT_NE(from_log.output.find("Rank 1 has nothing in flight"), std::string::npos) << from_log.output;
  std::ofstream(dir.path() / "empty.log") << "no records here\n";
  const auto none = run_job(kLauncher + " flight-record " + d + "/empty.log");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_NE(none.output.find("dtrain flight-record: no flight records in 1 path"), std::string::npos) << none.output;
}

TEST(Job, RanksThatReachedInitAreNotStoppedByTheStartTimeout) {
  for (int np : {1, 2}) {  // a world of one has no peers but still tells the launcher it started
    const auto result = run_job(kLauncher + " run -np " + std::to_string(np) + " --start-timeout 1 -- " + kCollectives +
                                " --gtest_filter=JobOnly.WorksLongerThanTheStartTimeout");
    EXPECT_EQ(result.exit_code, 0) << "np " << np << ": " << result.output;
  }
}

TEST(Job, WorkerWithTheWrongTokenIsRefused) {
  const auto result = run_job(
      kLauncher + " run -np 2 -- sh -c 'DTRAIN_JOB_TOKEN=forged exec " + kCollectives + " --gtest_filter=Barrier.*'",
      60);
  EXPECT_NE(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("refused this rank's job token"), std::string::npos) << result.output;
}

std::vector<std::string> dtrain_segments() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("dtrain-", 0) == 0) names.push_back(name);
  }
  return names;
}

TEST(Job, KilledWorkerLeavesNoSharedSegmentThatBreaksTheNextJob) {
  // A segment as a creator killed before unlinking it would leave: its pid is gone.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  const std::string stale = "/dev/shm/dtrain-" + std::to_string(child) + "-crashed-host0";
  std::ofstream(stale) << "stale";

  const auto crashed = run_job(kLauncher + " run -np 2 --kill-grace-s 1 -- " + kCollectives +
                               " --gtest_filter=JobOnly.RankOneDiesHoldingTheSharedSegment");
  EXPECT_NE(crashed.output.find("rank 1 (host localhost) was killed by signal 9"), std::string::npos) << crashed.output;
  EXPECT_FALSE(std::filesystem::exists(stale)) << "the next job's creator should remove it";
  for (const auto& name : dtrain_segments()) {
    EXPECT_EQ(name.find("-" + std::to_string(getpid()) + "-"), std::string::npos) << name;
  }
  const auto next = run_job(kLauncher + " run -np 2 -- " + kCollectives + " --gtest_filter=Allreduce.InPlace");
  EXPECT_EQ(next.exit_code, 0) << next.output;
}

TEST(Job, UnevenHostsFallBackToFlatAllreduceWithAReason) {
  const auto result = run_job("env DTRAIN_LOG_LEVEL=info " + kLauncher + " run -np 3 -- sh -c " +
                              "'[ $DTRAIN_RANK -ge 2 ] && export DTRAIN_HOSTNAME=second-host; exec \"$0\" \"$@\"' " +
                              kCollectives + " --gtest_filter=Allreduce.InPlace:Allreduce.Grouped*");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("hierarchical allreduce off: hosts run different numbers of ranks"), std::string::npos)
      << result.output;
}

}  // namespace
}  // namespace dtrain
