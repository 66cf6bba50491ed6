// `dtrain coco-eval` end to end on the golden data: the printed summary, the
// JSON report, and one-line errors with exit codes 1 (bad input) and 2 (usage).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace {

const std::string kDir = COCO_FAKE100_DIR;

using Outcome = dtrain::testing::CommandOutcome;
std::string slurp(const std::string& path) { return dtrain::testing::read_file(path); }

class CocoEvalCli : public testing::Test {
 protected:
  Outcome run(const std::string& args) {
    return dtrain::testing::run_capturing(std::string(DTRAIN_BINARY) + " coco-eval " + args, dir_);
  }

  const dtrain::testing::TempDir temp_;
  const std::string dir_ = temp_.path().string();
};

std::string printed_summary(const std::string& type) {
  std::ifstream in(kDir + "/val2014_fake_eval_res.txt");
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("type=", 0) == 0) inside = line == "type=" + type;
    if (inside && line.rfind(" Average", 0) == 0) {
      // Written by an older pycocotools with a title column one narrower.
      for (const char* title : {"Average Precision", "Average Recall   "}) {
        if (line.find(title) == 1 && line.compare(1 + 18, 1, "(") == 0) line.insert(1 + 17, " ");
      }
      out += line + "\n";
    }
  }
  return out;
}

TEST_F(CocoEvalCli, PrintsPycocotoolsSummaryAndWritesJson) {
  const auto expected = nlohmann::json::parse(slurp(kDir + "/expected.json"));
  for (const std::string type : {"bbox", "segm"}) {
    const std::string report = dir_ + "/" + type + ".json";
    const Outcome o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + kDir +
                          "/instances_val2014_fake" + type + "100_results.json --iou-type " + type +
                          " --threads 2 --json " + report);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, printed_summary(type));
    const auto json = nlohmann::ordered_json::parse(slurp(report));  // keeps the file order
    EXPECT_EQ(json["iou_type"], type);
    const std::vector<std::string> names = {"AP",  "AP50", "AP75",  "APs", "APm", "APl",
                                            "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"};
    ASSERT_EQ(json["stats"].size(), 12u);
    size_t i = 0;
    for (const auto& [name, value] : json["stats"].items()) {
      EXPECT_EQ(name, names[i]);
      EXPECT_NEAR(value.get<double>(), expected[type][i].get<double>(), 1e-9) << name;
      ++i;
    }
    ASSERT_EQ(json["per_category_ap"].size(), 80u);
    EXPECT_EQ(json["per_category_ap"][0]["id"], 1);
    EXPECT_EQ(json["per_category_ap"][0]["name"], "person");
  }
}

TEST_F(CocoEvalCli, BadInputIsOneLineAndExitOne) {
  std::ofstream(dir_ + "/broken.json") << "[{\"image_id\": 42, ";
  Outcome o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + dir_ +
                  "/broken.json --iou-type bbox");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.err.rfind("dtrain coco-eval: " + dir_ + "/broken.json: malformed JSON", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
  EXPECT_EQ(o.out, "");

  std::ofstream(dir_ + "/unknown.json")
      << R"([{"image_id": 42, "category_id": 18, "bbox": [1, 2, 3, 4], "score": 0.5},
            {"image_id": 12345678, "category_id": 18, "bbox": [1, 2, 3, 4], "score": 0.5}])";
  o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + dir_ + "/unknown.json --iou-type bbox");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("results[1]: image_id 12345678 is not an image of the ground truth"),
            std::string::npos)
      << o.err;

  o = run("--gt " + dir_ + "/missing.json --dt " + dir_ + "/unknown.json --iou-type segm");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.err, "dtrain coco-eval: " + dir_ + "/missing.json: cannot open file\n");
}

TEST_F(CocoEvalCli, UsageErrorsExitTwo) {
  Outcome o = run("--gt a.json --dt b.json --iou-type keypoints");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err.rfind("dtrain coco-eval: ", 0), 0u) << o.err;
  o = run("--gt a.json --iou-type bbox");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("--dt"), std::string::npos) << o.err;
  o = run("--gt a.json --dt b.json --iou-type bbox --threads -3");
  EXPECT_EQ(o.exit_code, 2);
}

}  // namespace
