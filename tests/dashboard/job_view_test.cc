// What the dashboard shows of a job directory however far it was written: a running job,
// a finished one, a runner that died, malformed and truncated files.
#include "dashboard/job_view.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace dtrain::dashboard {
namespace {

using Json = nlohmann::ordered_json;
using dtrain::testing::TempDir;
using dtrain::testing::write_text;

std::string hostname() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

Json running_status(int runner_pid) {
  return {{"job_name", "mnist-2x1"},
          {"started_at", 1000.0},
          {"runner_pid", runner_pid},
          {"runner_host", hostname()},
          {"hosts_backend", "process"},
          {"engine", "gloo"},
          {"instance_count", 2},
          {"processes_per_host", 2},
          {"metric_names", {"train:loss"}},
          {"checkpoint_sync_to", nullptr},
          {"status", "Running"},
          {"failure_reason", nullptr},
          {"updated_at", 1001.0},
          {"hosts",
           {{{"name", "algo-1"},
             {"state", "running"},
             {"exit_code", nullptr},
             {"signal", nullptr},
             {"reason", nullptr},
             {"staging", Json::array()}},
            {{"name", "algo-2"},
             {"state", "lost"},
             {"exit_code", 137},
             {"signal", 9},
             {"reason", "algo-2: killed"},
             {"staging", Json::array()}}}}};
}

class JobView : public ::testing::Test {
 protected:
  JobLocation job() const { return {"mnist-2x1", dir / "mnist-2x1"}; }
  void write(const std::string& name, const std::string& text) { write_text(dir.path() / "mnist-2x1" / name, text); }
  TempDir dir;
};

TEST_F(JobView, ARunningJobShowsItsStatusHostsRanksAndLastMetrics) {
  write("status.json", running_status(::getpid()).dump());
  write("metrics.jsonl", R"({"time":1002.5,"host":"algo-1","rank":0,"name":"train:loss","value":0.9})"
                         "\n"
                         R"({"time":1003.5,"host":"algo-1","rank":0,"name":"train:loss","value":0.5})"
                         "\n");
  write("logs/algo-1.log", "hello\n");
  Json d = job_detail(job());
  EXPECT_EQ(d["status"], "Running");
  EXPECT_EQ(d["name"], "mnist-2x1");
  EXPECT_EQ(d["engine"], "gloo");
  EXPECT_GT(d["duration_s"].get<double>(), 0.0);
  EXPECT_EQ(d["final_metrics"]["train:loss"], 0.5);
  ASSERT_EQ(d["hosts"].size(), 2u);
  EXPECT_EQ(d["hosts"][1]["state"], "lost");
  EXPECT_EQ(d["hosts"][1]["signal"], 9);
  ASSERT_EQ(d["hosts"][1]["ranks"].size(), 2u);
  EXPECT_EQ(d["hosts"][1]["ranks"][1]["rank"], 3);
  EXPECT_EQ(d["hosts"][1]["ranks"][1]["state"], "lost");
  EXPECT_EQ(d["log_hosts"], Json::array({"algo-1"}));
  EXPECT_EQ(d["metric_names"], Json::array({"train:loss"}));

  Json m = metric_samples(job(), 0);
  ASSERT_EQ(m["samples"].size(), 2u);
  EXPECT_DOUBLE_EQ(m["samples"][1]["time"].get<double>(), 3.5);  // seconds since the job started
  EXPECT_EQ(m["samples"][1]["rank"], 0);
}

TEST_F(JobView, RanksComeFromTheLaunchersRecordWhenThereIsOne) {
  write("status.json", running_status(::getpid()).dump());
  write("ranks.json", R"({"ranks": [
      {"rank": 0, "host": "algo-1", "local_rank": 0, "pid": 41, "state": "running", "reached_rendezvous": true,
       "exit_code": null, "signal": null},
      {"rank": 1, "host": "algo-1", "local_rank": 1, "pid": 42, "state": "failed", "reached_rendezvous": true,
       "exit_code": 3, "signal": null}]})");
  Json d = job_detail(job());
  const Json& ranks = d["hosts"][0]["ranks"];
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0]["state"], "running");
  EXPECT_EQ(ranks[0]["pid"], 41);
  EXPECT_EQ(ranks[0]["reached_rendezvous"], true);
  EXPECT_EQ(ranks[1]["state"], "failed");
  EXPECT_EQ(ranks[1]["exit_code"], 3);
  // algo-2 has no record: its ranks carry the host's state.
  EXPECT_EQ(d["hosts"][1]["ranks"][0]["state"], "lost");

  // Once the job is over, a rank last seen running ended with its host.
  Json ended = running_status(::getpid());
  ended["status"] = "Failed";
  ended["hosts"][0]["state"] = "failed";
  ended["hosts"][0]["exit_code"] = 1;
  write("status.json", ended.dump());
  EXPECT_EQ(job_detail(job())["hosts"][0]["ranks"][0]["state"], "failed");
}

TEST_F(JobView, ARunnerGoneWithoutASummaryIsInterrupted) {
  // A child that has exited and been reaped: its pid names no process.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  write("status.json", running_status(child).dump());
  Json row = job_summary(job());
  EXPECT_EQ(row["status"], "Interrupted");
  EXPECT_NE(row["failure_reason"].get<std::string>().find("ended without writing summary.json"), std::string::npos);
}

TEST_F(JobView, TheSummaryDecidesOnceWritten) {
  write("status.json", running_status(::getpid()).dump());
  write("summary.json", Json{{"job_name", "mnist-2x1"},
                             {"status", "Failed"},
                             {"failure_reason", "AlgorithmError: rank 1 exited with status 1"},
                             {"total_seconds", 12.5},
                             {"final_metrics", {{"test:accuracy", 0.97}}},
                             {"hosts", {{{"name", "algo-1"}, {"exit_code", 1}, {"failure", "AlgorithmError"}}}}}
                            .dump());
  Json d = job_detail(job());
  EXPECT_EQ(d["status"], "Failed");
  EXPECT_EQ(d["duration_s"], 12.5);
  EXPECT_EQ(d["final_metrics"], (Json{{"test:accuracy", 0.97}}));
  EXPECT_EQ(d["hosts"][0]["state"], "failed");
  EXPECT_EQ(d["hosts"][0]["exit_code"], 1);
}

TEST_F(JobView, MalformedAndTruncatedFilesLeaveFieldsEmptyNotAnError) {
  write("status.json", "{\"job_name\": \"mnist-2x1\", \"status\": \"Runn");  // cut mid-write
  write("summary.json", "[1, 2, 3]");                                        // not an object
  write("metrics.jsonl",
        "garbage\n"
        R"({"time":5,"host":"algo-1","rank":null,"name":"loss","value":1.5})"
        "\n"
        R"({"time":6,"name":"loss","value":"NaN"})"
        "\n"
        R"({"time":7,"host":"algo-1","rank":0,"name":"loss","val)");
  Json d = job_detail(job());
  EXPECT_EQ(d["status"], "Unknown");
  EXPECT_EQ(d["name"], "mnist-2x1");
  EXPECT_EQ(d["started_at"], nullptr);
  EXPECT_TRUE(d["hosts"].empty());
  Json m = metric_samples(job(), 0);
  ASSERT_EQ(m["samples"].size(), 1u);
  EXPECT_EQ(m["skipped"], 2);
  EXPECT_EQ(m["samples"][0]["time"], 0.0);  // no start known: seconds since the first sample
  // The half line is not consumed: the next read starts at it.
  const std::string complete_lines =
      "garbage\n"
      R"({"time":5,"host":"algo-1","rank":null,"name":"loss","value":1.5})"
      "\n"
      R"({"time":6,"name":"loss","value":"NaN"})"
      "\n";
  EXPECT_EQ(m["next"].get<uint64_t>(), complete_lines.size());
}

TEST_F(JobView, AnEmptyDirectoryIsAnUnknownJob) {
  write("logs/algo-1.log", "");
  Json d = job_detail(job());
  EXPECT_EQ(d["status"], "Unknown");
  EXPECT_TRUE(d["final_metrics"].empty());
  EXPECT_EQ(log_lines(job(), "algo-1", std::nullopt)["text"], "");
}

TEST(JobCatalog, JobsAreTheDirectoriesAJobRunnerWrote) {
  TempDir a, b;
  write_text(a.path() / "one/status.json", "{}");
  write_text(a.path() / "two/logs/algo-1.log", "");
  write_text(a.path() / "not-a-job/readme.txt", "");
  write_text(b.path() / "one/summary.json", "{}");
  std::filesystem::create_directory_symlink(a.path() / "one", b.path() / "linked");
  auto jobs = find_jobs({a.path().string(), b.path().string()});
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].id, "one");
  EXPECT_EQ(jobs[1].id, "two");
  EXPECT_EQ(jobs[2].id, "one~2");
  EXPECT_EQ(jobs[2].dir, (b.path() / "one").string());
  EXPECT_FALSE(find_job({a.path().string()}, "not-a-job"));
  EXPECT_FALSE(find_job({a.path().string()}, "../" + a.path().filename().string()));
}

}  // namespace
}  // namespace dtrain::dashboard
