#include <gtest/gtest.h>

#include <string>

#include "vision/evaluation/coco_detections.h"
#include "vision/coco/coco_error.h"
#include "vision/evaluation/coco_ground_truth.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_string.h"

namespace dtrain::vision {
namespace {

const char* kGroundTruth = R"({
  "images": [{"id": 7, "height": 10, "width": 12}, {"id": 3, "height": 20, "width": 20}],
  "categories": [{"id": 90, "name": "toothbrush"}, {"id": 1, "name": "person"}],
  "annotations": [
    {"id": 1, "image_id": 7, "category_id": 1, "area": 12.5, "iscrowd": 0,
     "bbox": [1, 2, 3, 4], "segmentation": [[1, 2, 4, 2, 4, 6, 1, 6]]},
    {"id": 2, "image_id": 3, "category_id": 90, "area": 4, "iscrowd": 1,
     "bbox": [0, 0, 2, 2], "segmentation": {"size": [20, 20], "counts": [0, 2, 18, 2, 378]}},
    {"id": 3, "image_id": 3, "category_id": 1, "area": 6, "iscrowd": 0,
     "bbox": [0, 0, 2, 3], "segmentation": {"size": [20, 20], "counts": "03T<"}}
  ]})";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const CocoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a CocoError";
  return "";
}

TEST(CocoGroundTruth, ReadsImagesCategoriesAndEverySegmentationForm) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  ASSERT_EQ(gt.images().size(), 2u);
  EXPECT_EQ(gt.find_image(3)->height, 20u);
  EXPECT_EQ(gt.find_image(4), nullptr);
  ASSERT_EQ(gt.categories().size(), 2u);
  EXPECT_EQ(gt.categories()[0].id, 90);
  ASSERT_EQ(gt.annotations().size(), 3u);
  const auto& a = gt.annotations();
  EXPECT_TRUE(std::holds_alternative<Polygons>(a[0].segmentation));
  EXPECT_TRUE(std::holds_alternative<RunLengthMask>(a[1].segmentation));
  EXPECT_TRUE(a[1].iscrowd);
  ASSERT_TRUE(std::holds_alternative<CompressedRle>(a[2].segmentation));
  EXPECT_EQ(std::get<CompressedRle>(a[2].segmentation).counts, "03T<");
  EXPECT_EQ(a[0].bbox, (BoundingBox{1, 2, 3, 4}));
  EXPECT_EQ(a[0].area, 12.5);
}

TEST(CocoGroundTruth, ErrorsNameTheFileTheEntryAndTheField) {
  EXPECT_EQ(error_of([] { CocoGroundTruth::parse("{\"images\": [", "gt.json"); })
                .rfind("gt.json: malformed JSON", 0),
            0u);
  const std::string missing = error_of([] {
    CocoGroundTruth::parse(R"({"images": [], "categories": [],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "bbox": [0,0,1,1]},
                      {"id": 2, "image_id": 1, "category_id": 1, "iscrowd": 0, "bbox": [0,0,1,1]}]})",
                           "gt.json");
  });
  EXPECT_EQ(missing, "gt.json: annotations[0]: missing field 'area'");
  EXPECT_EQ(error_of([] { CocoGroundTruth::parse(R"({"images": [], "categories": []})", "g"); }),
            "g: missing list 'annotations'");
  EXPECT_EQ(error_of([] {
              CocoGroundTruth::parse(R"({"images": [{"id": 1, "height": 2, "width": "x"}],
                                       "categories": [], "annotations": []})", "g");
            }),
            "g: images[0]: field 'width' must be an integer, got \"x\"");
  EXPECT_EQ(error_of([] { CocoGroundTruth::load("/nonexistent/gt.json"); }),
            "/nonexistent/gt.json: cannot open file");
}

TEST(CocoDetections, BoxResultsGetAreaIdsAndABoxPolygon) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const CocoDetections dt = CocoDetections::parse(gt, R"([
      {"image_id": 7, "category_id": 1, "bbox": [1.5, 2, 3, 4.25], "score": 0.9},
      {"image_id": 3, "category_id": 90, "bbox": [0, 0, 2, 2], "score": 0.1, "id": 77}])", "dt.json");
  ASSERT_EQ(dt.detections().size(), 2u);
  const auto& d = dt.detections();
  EXPECT_EQ(d[0].id, 1);
  EXPECT_EQ(d[1].id, 2);
  EXPECT_EQ(d[0].area, 3 * 4.25);
  EXPECT_FALSE(d[0].iscrowd);
  ASSERT_TRUE(std::holds_alternative<Polygons>(d[0].segmentation));
  EXPECT_EQ(std::get<Polygons>(d[0].segmentation)[0],
            (std::vector<double>{1.5, 2, 1.5, 6.25, 4.5, 6.25, 4.5, 2}));
}

TEST(CocoDetections, MaskResultsGetAreaAndBoxFromTheMask) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const RunLengthMask mask = rle_from_box({2, 3, 4, 5}, 10, 12);
  const std::string counts = rle_counts_to_string(mask);
  const CocoDetections dt = CocoDetections::parse(
      gt,
      R"([{"image_id": 7, "category_id": 1, "score": 0.5, "segmentation": {"size": [10, 12], "counts": ")" +
          counts + R"("}}])",
      "dt.json");
  ASSERT_EQ(dt.detections().size(), 1u);
  EXPECT_EQ(dt.detections()[0].area, 20.0);
  EXPECT_EQ(dt.detections()[0].bbox, (BoundingBox{2, 3, 4, 5}));
  EXPECT_EQ(std::get<RunLengthMask>(dt.detections()[0].segmentation), mask);
}

TEST(CocoDetections, ErrorsNameTheEntry) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  EXPECT_EQ(error_of([&] {
              CocoDetections::parse(gt, R"([{"image_id": 7, "category_id": 1, "bbox": [0,0,1,1], "score": 1},
                                            {"image_id": 5, "category_id": 1, "bbox": [0,0,1,1], "score": 1}])",
                                    "dt.json");
            }),
            "dt.json: results[1]: image_id 5 is not an image of the ground truth gt.json");
  EXPECT_EQ(error_of([&] {
              CocoDetections::parse(gt, R"([{"image_id": 7, "category_id": 1, "bbox": [0,0,1,1], "score": 1},
                                            {"image_id": 7, "category_id": 1, "score": 1}])",
                                    "dt.json");
            }),
            "dt.json: results[1]: missing field 'bbox'");
  EXPECT_EQ(error_of([&] {
              CocoDetections::parse(gt, R"([{"image_id": 7, "category_id": 1, "bbox": [0,0,1], "score": 1}])",
                                    "dt.json");
            }),
            "dt.json: results[0]: field 'bbox' must be [x, y, width, height], got [0,0,1]");
  EXPECT_EQ(error_of([&] { CocoDetections::parse(gt, R"({"a": 1})", "dt.json"); }),
            "dt.json: results must be a JSON list of detections, got object");
  EXPECT_EQ(error_of([&] {
              CocoDetections::parse(gt, R"([{"image_id": 7, "category_id": 1, "score": 1,
                                             "segmentation": {"size": [10, 12], "counts": "0 "}}])",
                                    "dt.json");
            }).rfind("dt.json: results[0]: field 'segmentation': RLE counts string has an invalid", 0),
            0u);
  EXPECT_TRUE(CocoDetections::parse(gt, "[]", "dt.json").detections().empty());
}

}  // namespace
}  // namespace dtrain::vision
