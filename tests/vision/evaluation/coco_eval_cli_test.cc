// `dtrain coco-eval` end to end on the golden data: the printed summary, the
// JSON report, and one-line errors with exit codes 1 (bad input) and 2 (usage).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdint>
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
    const Outcome o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + kDir + "/instances_val2014_fake" +
                          type + "100_results.json --iou-type " + type + " --threads 2 --json " + report);
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

// The first 24 bytes of a PNG: signature, IHDR, width and height (big-endian).
bool is_png_of_size(const std::string& path, uint32_t width, uint32_t height) {
  const std::string bytes = slurp(path);
  if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0 || bytes.compare(12, 4, "IHDR") != 0) {
    return false;
  }
  const auto be32 = [&](size_t at) {
    return uint32_t(uint8_t(bytes[at])) << 24 | uint32_t(uint8_t(bytes[at + 1])) << 16 |
           uint32_t(uint8_t(bytes[at + 2])) << 8 | uint32_t(uint8_t(bytes[at + 3]));
  };
  return be32(16) == width && be32(20) == height;
}

TEST_F(CocoEvalCli, ReportOfBboxAndSegmShareOneDirectory) {
  const std::string report = dir_ + "/report/nested";  // created with its parents
  for (const std::string type : {"bbox", "segm"}) {
    const Outcome o =
        run("--gt " + kDir + "/instances_val2014_100.json --dt " + kDir + "/instances_val2014_fake" + type +
            "100_results.json --iou-type " + type + " --json " + dir_ + "/" + type + ".json --report " + report);
    ASSERT_EQ(o.exit_code, 0) << o.err;
    EXPECT_EQ(o.out, printed_summary(type));  // the summary is unchanged
    EXPECT_NE(o.err.find("wrote 9 report files to " + report), std::string::npos) << o.err;
    EXPECT_EQ(nlohmann::json::parse(slurp(dir_ + "/" + type + ".json"))["stats"].size(), 12u);
  }
  for (const std::string type : {"bbox", "segm"}) {
    const std::string base = report + "/" + type;
    for (const char* area : {"all", "small", "medium", "large"}) {
      EXPECT_TRUE(is_png_of_size(base + "_pr_" + area + ".png", 800, 600)) << base << " " << area;
    }
    EXPECT_TRUE(is_png_of_size(base + "_pr_per_category.png", 4 * 360, 72 + 4 * 300)) << base;

    const auto pr = nlohmann::json::parse(slurp(base + "_pr.json"));
    EXPECT_EQ(pr["iou_type"], type);
    ASSERT_EQ(pr["recall_thresholds"].size(), 101u);
    ASSERT_EQ(pr["precision"].size(), 10u);
    ASSERT_EQ(pr["precision"][0].size(), 4u);
    EXPECT_EQ(pr["precision"][0][0].size(), 101u);
    EXPECT_EQ(pr["category_precision"].size(), 80u);

    const std::string csv = slurp(base + "_per_category.csv");
    EXPECT_EQ(csv.rfind("id,name,AP,AP50,AP75,APs,APm,APl,ground_truths,detections\n1,person,", 0), 0u) << csv;
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 81);
    // The "all categories" row is the summary, as printed (three decimals).
    const std::string md = slurp(base + "_per_category.md");
    const std::string summary = printed_summary(type);
    const std::string ap = summary.substr(summary.find(" = ") + 3, 5);
    EXPECT_NE(md.find("| **all categories** | " + ap + " |"), std::string::npos) << md;
    EXPECT_NE(md.find("Errors at IoU 0.50"), std::string::npos);

    const auto errors = nlohmann::json::parse(slurp(base + "_errors.json"));
    EXPECT_EQ(errors["categories"].size(), 80u);
    EXPECT_GT(errors["total"]["false_positives"].get<int>(), 0);
  }
}

TEST_F(CocoEvalCli, UnwritableReportDirectoryIsOneLineAndExitOne) {
  std::ofstream(dir_ + "/a-file") << "not a directory";
  const std::string report = dir_ + "/a-file/report";
  const Outcome o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + kDir +
                        "/instances_val2014_fakebbox100_results.json --iou-type bbox --report " + report);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.err.rfind("dtrain coco-eval: " + report + ": cannot write the report there (", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_EQ(o.out, "");  // checked before the evaluation
}

TEST_F(CocoEvalCli, BadInputIsOneLineAndExitOne) {
  std::ofstream(dir_ + "/broken.json") << "[{\"image_id\": 42, ";
  Outcome o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + dir_ + "/broken.json --iou-type bbox");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.err.rfind("dtrain coco-eval: " + dir_ + "/broken.json: malformed JSON", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
  EXPECT_EQ(o.out, "");

  std::ofstream(dir_ + "/unknown.json") << R"([{"image_id": 42, "category_id": 18, "bbox": [1, 2, 3, 4], "score": 0.5},
            {"image_id": 12345678, "category_id": 18, "bbox": [1, 2, 3, 4], "score": 0.5}])";
  o = run("--gt " + kDir + "/instances_val2014_100.json --dt " + dir_ + "/unknown.json --iou-type bbox");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("results[1]: image_id 12345678 is not an image of the ground truth"), std::string::npos)
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
