// `dtrain data` end to end: progress lines, byte-identical output for a seed,
// the generated set evaluated by `dtrain coco-eval` with AP = 1 when its own
// ground truth is the detections, and one-line errors with exit codes 1 and 2.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"
#include "vision/evaluation/coco_ground_truth.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/segmentation_mask.h"

namespace dtrain::vision {
namespace {

namespace fs = std::filesystem;

using Outcome = dtrain::testing::CommandOutcome;
std::string slurp(const fs::path& path) { return dtrain::testing::read_file(path.string()); }

class DataCli : public ::testing::Test {
 protected:
  Outcome run(const std::string& args) {
    return dtrain::testing::run_capturing(std::string(DTRAIN_BINARY) + " " + args, dir_.path().string());
  }
  testing::TempDir dir_;
};

TEST_F(DataCli, MakeShapesPrintsProgressAndIsByteIdenticalForASeed) {
  const std::string args = " --train 20 --val 4 --size 64 --seed 7";
  const Outcome a = run("data make-shapes --out " + (dir_ / "a") + args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("wrote 10/20 train images\n"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("wrote 20/20 train images\n"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("wrote 4/4 val images\n"), std::string::npos) << a.out;
  EXPECT_EQ(a.err, "");
  const Outcome b = run("data make-shapes --threads 1 --out " + (dir_ / "b") + args);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() / "a")) {
    if (!e.is_regular_file()) continue;
    const fs::path relative = fs::relative(e.path(), dir_.path() / "a");
    EXPECT_EQ(slurp(e.path()), slurp(dir_.path() / "b" / relative)) << relative;
  }
  EXPECT_TRUE(fs::exists(dir_.path() / "a/val/000000000004.png"));
}

TEST_F(DataCli, CocoEvalScoresTheGroundTruthAsDetectionsAtApOne) {
  ASSERT_EQ(run("data make-shapes --out " + (dir_ / "s") + " --train 0 --val 10 --size 80 --seed 1").exit_code, 0);
  const std::string gt_path = dir_ / "s/annotations/instances_val.json";
  const CocoGroundTruth gt = CocoGroundTruth::load(gt_path);
  nlohmann::json boxes = nlohmann::json::array(), masks = nlohmann::json::array();
  for (const CocoAnnotation& a : gt.annotations()) {
    boxes.push_back({{"image_id", a.image_id},
                     {"category_id", a.category_id},
                     {"score", 1},
                     {"bbox", {a.bbox.x, a.bbox.y, a.bbox.width, a.bbox.height}}});
    const CocoImage* image = gt.find_image(a.image_id);
    const RunLengthMask m = segmentation_mask(a.segmentation, image->height, image->width);
    masks.push_back({{"image_id", a.image_id},
                     {"category_id", a.category_id},
                     {"score", 1},
                     {"segmentation", {{"size", {m.height, m.width}}, {"counts", rle_counts_to_string(m)}}}});
  }
  std::ofstream(dir_ / "boxes.json") << boxes.dump();
  std::ofstream(dir_ / "masks.json") << masks.dump();
  for (const char* type : {"bbox", "segm"}) {
    const std::string dt = dir_ / (std::string(type) == "bbox" ? "boxes.json" : "masks.json");
    const Outcome o =
        run("coco-eval --gt " + gt_path + " --dt " + dt + " --iou-type " + type + " --json " + (dir_ / "report.json"));
    ASSERT_EQ(o.exit_code, 0) << o.err;
    const auto report = nlohmann::json::parse(slurp(dir_ / "report.json"));
    EXPECT_NEAR(report["stats"]["AP"].get<double>(), 1.0, 1e-6) << type;
    EXPECT_NEAR(report["stats"]["AP50"].get<double>(), 1.0, 1e-6) << type;
  }
}

TEST_F(DataCli, MakeMnistInstancesWritesRleMasks) {
  if (!fs::exists(fs::path(MNIST_DIR) / "train-images-idx3-ubyte")) GTEST_SKIP() << "no MNIST";
  const Outcome o = run(std::string("data make-mnist-instances --mnist ") + MNIST_DIR + " --out " + (dir_ / "m") +
                        " --train 6 --val 2 --size 112 --seed 3");
  ASSERT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.out.find("wrote 6/6 train images"), std::string::npos);
  const auto json = nlohmann::json::parse(slurp(dir_.path() / "m/annotations/instances_train.json"));
  EXPECT_EQ(json["categories"].size(), 10u);
  ASSERT_GT(json["annotations"].size(), 0u);
  EXPECT_TRUE(json["annotations"][0]["segmentation"]["counts"].is_string());
}

TEST_F(DataCli, ErrorsAreOneLineWithExitCodes) {
  Outcome o = run("data make-shapes --train 3 --val 1");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err, "dtrain data: --out is required\n");
  o = run("data make-shapes --out x --train -1 --val 1");
  EXPECT_EQ(o.exit_code, 2);
  o = run("data make-everything --out x");
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_EQ(o.err.rfind("dtrain data: ", 0), 0u) << o.err;
  o = run("data make-mnist-instances --mnist " + (dir_ / "none") + " --out " + (dir_ / "m") + " --train 2 --val 0");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.err.rfind("dtrain data: MNIST", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
  // An output path that cannot be created.
  std::ofstream(dir_ / "file") << "x";
  o = run("data make-shapes --out " + (dir_ / "file") + " --train 1 --val 0");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.err.rfind("dtrain data: ", 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1);
}

}  // namespace
}  // namespace dtrain::vision
