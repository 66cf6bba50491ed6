// The dashboard in a real browser (Debian's Chromium, headless, driven by playwright-core
// through browser_check.cjs) against real jobs: an MNIST job run with `dtrain job run
// --dashboard` watched from Running to Completed, then `dtrain dashboard` comparing two jobs,
// drawing a timeline and a coco-eval report's precision/recall curves. Screenshots of every
// page are kept in the build's tests/dashboard/screenshots/ (DTRAIN_DASHBOARD_SCREENSHOTS=DIR:
// there instead).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/launch/child_runner.h"
#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using dtrain::launch::testing::ChildResult;
using dtrain::launch::testing::ChildRunner;
using dtrain::testing::read_file;
using dtrain::testing::TempDir;
using dtrain::testing::write_text;

std::string screenshots_dir() {
  const char* chosen = std::getenv("DTRAIN_DASHBOARD_SCREENSHOTS");
  std::string dir = chosen && *chosen ? chosen : DASHBOARD_SCREENSHOTS;
  fs::create_directories(dir);
  return dir;
}

// One scenario of browser_check.cjs; its observations (the last stdout line) as JSON.
Json browse(const std::vector<std::string>& arguments, const TempDir& scratch) {
  std::string command = "DTRAIN_NPM_MODULES='" NPM_MODULES "' timeout -k 5 200 node '" BROWSER_CHECK "'";
  for (const auto& a : arguments) command += " '" + a + "'";
  command += " --screenshots '" + screenshots_dir() + "'";
  const auto outcome = dtrain::testing::run_capturing(command, scratch.path().string());
  EXPECT_EQ(outcome.exit_code, 0) << command << "\n" << outcome.out << outcome.err;
  const size_t last_line = outcome.out.find_last_of('\n', outcome.out.size() >= 2 ? outcome.out.size() - 2 : 0);
  const std::string line = outcome.out.substr(last_line == std::string::npos ? 0 : last_line + 1);
  Json observed = Json::parse(line, nullptr, false);
  EXPECT_TRUE(observed.is_object()) << "not an observation: " << outcome.out << outcome.err;
  return observed.is_object() ? observed : Json::object();
}

// The values of the metric `name` in a job's metrics.jsonl.
size_t samples_of(const std::string& metrics_file, const std::string& name) {
  std::istringstream lines(read_file(metrics_file));
  size_t count = 0;
  for (std::string line; std::getline(lines, line);) {
    if (Json::parse(line, nullptr, false).value("name", "") == name) ++count;
  }
  return count;
}

// An MNIST job of two hosts whose ranks each say where they are, train, and then wait for
// the gate file (the browser creates it once it has seen the job running), at most 150 s.
void write_mnist_spec(const TempDir& dir, const std::string& name, int hosts, const std::string& gate) {
  std::string wait =
      gate.empty() ? "" : " && for i in $(seq 1500); do [ -e '" + gate + "' ] && exit 0; sleep 0.1; done; exit 1";
  const std::string timeline = (dir.path() / "jobs" / name / "timeline.json").string();
  write_text(dir.path() / (name + ".yaml"), "name: " + name + R"y(
command: ["sh", "-c", "echo rank $DTRAIN_RANK on $SM_CURRENT_HOST && ')y" DTRAIN_MNIST R"y(' \"$@\")y" +
                                                wait + R"y(", "mnist"]
hyperparameters: {epochs: 1, steps: 60, batch-size: 64, log-every: 10}
channels:
  training: {source: ')y" MNIST_DATA_DIR R"y('}
metric_definitions:
  - {name: train:loss, regex: "Loss: ([0-9.]+)"}
  - {name: train:images_per_s, regex: "images/s: ([0-9.]+)"}
  - {name: test:accuracy, regex: "Test accuracy: ([0-9.]+)"}
output_path: jobs
environment:
  OMP_NUM_THREADS: "1"
  DTRAIN_TIMELINE: )y" + timeline +
                                                "\ninstance_count: " + std::to_string(hosts) + "\n");
}

bool browser_available(std::string& why) {
  if (::access("/usr/bin/chromium", X_OK) != 0) why = "/usr/bin/chromium is missing (scripts/setup installs it)";
  if (!fs::exists(NPM_MODULES "/playwright-core/package.json")) why = "playwright-core is missing (run scripts/setup)";
  return why.empty();
}

TEST(DashboardInABrowser, ALiveJobGoesFromRunningToCompletedThenComparesAndDrawsItsTimeline) {
  std::string why;
  ASSERT_TRUE(browser_available(why)) << why;
  TempDir dir;
  const std::string gate = dir / "gate";
  write_mnist_spec(dir, "mnist-live", 2, gate);
  ChildRunner job({DTRAIN_BINARY, "job", "run", dir / "mnist-live.yaml", "--dashboard", "0"});
  ASSERT_TRUE(job.wait_for_stdout("#/job/mnist-live\n", 60)) << job.out();
  std::smatch url;
  const std::string out = job.out();
  ASSERT_TRUE(std::regex_search(out, url, std::regex("dashboard at (http://127\\.0\\.0\\.1:[0-9]+/)"))) << out;

  Json live = browse({"live-job", "--url", url[1], "--job", "mnist-live", "--gate", gate}, dir);
  ChildResult ended = job.finish(180);
  ASSERT_TRUE(ended.exited) << ended.out << ended.err;
  EXPECT_EQ(ended.exit_code, 0) << ended.out << ended.err;
  EXPECT_EQ(live["sawRunning"], true) << live;
  EXPECT_EQ(live["sawCompleted"], true) << live;
  EXPECT_EQ(live["reloaded"], false) << live;
  // Every train:loss line the job extracted is a point of the job page's curve.
  const size_t losses = samples_of(dir / "jobs/mnist-live/metrics.jsonl", "train:loss");
  EXPECT_EQ(losses, 6u);
  EXPECT_EQ(live["lossPoints"], losses) << live;
  std::set<std::string> hosts(live["logHosts"].begin(), live["logHosts"].end());
  EXPECT_TRUE(hosts.count("algo-1") && hosts.count("algo-2")) << live;
  // The ranks as the master's launcher saw them: running while the job waited, then exited.
  EXPECT_EQ(live["ranksWhileRunning"], Json::array({"0:running", "1:running"})) << live;
  EXPECT_EQ(live["ranksAtTheEnd"], Json::array({"0:exited", "1:exited"})) << live;

  // A second job, then the stand-alone dashboard over both.
  write_mnist_spec(dir, "mnist-one", 1, "");
  ChildRunner second({DTRAIN_BINARY, "job", "run", dir / "mnist-one.yaml"});
  ChildResult second_ended = second.finish(180);
  ASSERT_TRUE(second_ended.exited && second_ended.exit_code == 0) << second_ended.out << second_ended.err;
  // A coco-eval report written into a job's directory: its precision/recall file gets a page.
  ChildRunner report({DTRAIN_BINARY, "coco-eval", "--gt", COCO_FAKE100 "/instances_val2014_100.json", "--dt",
                      COCO_FAKE100 "/instances_val2014_fakebbox100_results.json", "--iou-type", "bbox", "--report",
                      dir / "jobs/mnist-one/report"});
  ChildResult reported = report.finish(120);
  ASSERT_TRUE(reported.exited && reported.exit_code == 0) << reported.out << reported.err;
  ChildRunner dashboard({DTRAIN_BINARY, "dashboard", "--jobs", dir / "jobs", "--port", "0"});
  ASSERT_TRUE(dashboard.wait_for_stdout("dtrain dashboard: http://", 30)) << dashboard.out();
  std::smatch address;
  const std::string dashboard_out = dashboard.out();
  ASSERT_TRUE(std::regex_search(dashboard_out, address, std::regex("http://127\\.0\\.0\\.1:([0-9]+)/")))
      << dashboard_out;

  Json compare =
      browse({"compare", "--url", address[0], "--jobs", "mnist-live,mnist-one", "--metric", "train:loss"}, dir);
  EXPECT_EQ(compare["series"], 2) << compare;
  EXPECT_EQ(compare["points"], losses + samples_of(dir / "jobs/mnist-one/metrics.jsonl", "train:loss")) << compare;

  // The timeline rank 0 wrote, as many spans as the server read from it.
  httplib::Client api("127.0.0.1", std::stoi(address[1]));
  auto timeline = api.Get("/api/jobs/mnist-live/timeline?file=timeline.json");
  ASSERT_TRUE(timeline && timeline->status == 200) << (timeline ? timeline->body : "no answer");
  const size_t spans = Json::parse(timeline->body)["spans"].size();
  EXPECT_GT(spans, 100u);
  Json drawn = browse({"timeline", "--url", address[0], "--job", "mnist-live", "--file", "timeline.json"}, dir);
  EXPECT_EQ(drawn["spans"], spans) << drawn;
  // The job's 60 steps, found from one gradient's negotiations, each with its own breakdown.
  EXPECT_EQ(drawn["steps"], 60) << drawn;
  EXPECT_NE(std::find(drawn["stepActivities"].begin(), drawn["stepActivities"].end(), "ALLREDUCE"),
            drawn["stepActivities"].end())
      << drawn;
  Json curves =
      browse({"precision-recall", "--url", address[0], "--job", "mnist-one", "--file", "report/bbox_pr.json"}, dir);
  ASSERT_EQ(curves["charts"].size(), 4u) << curves;
  const char* areas[] = {"all", "small", "medium", "large"};
  for (size_t a = 0; a < 4; ++a) {
    EXPECT_EQ(curves["charts"][a]["metric"], std::string("precision, area ") + areas[a]) << curves;
    EXPECT_EQ(curves["charts"][a]["series"], 10) << curves;  // one curve per IoU threshold
  }
  dashboard.signal(SIGTERM);
  EXPECT_TRUE(dashboard.finish(30).exited);
}

}  // namespace
