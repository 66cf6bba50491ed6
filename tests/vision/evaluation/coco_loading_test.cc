#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>

#include "vision/evaluation/coco_detections.h"
#include "vision/coco/coco_error.h"
#include "vision/evaluation/coco_ground_truth.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/run_length_mask.h"

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
  EXPECT_EQ(error_of([] { CocoGroundTruth::parse("{\"images\": [", "gt.json"); }).rfind("gt.json: malformed JSON", 0),
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
                                       "categories": [], "annotations": []})",
                                     "g");
            }),
            "g: images[0]: field 'width' must be an integer, got \"x\"");
  EXPECT_EQ(error_of([] { CocoGroundTruth::load("/nonexistent/gt.json"); }), "/nonexistent/gt.json: cannot open file");
}

// Annotations are read on several threads: with faults at 5000 and 9000 the
// first in file order is reported, and a good file reads the same, for every
// thread count.
TEST(CocoGroundTruth, ManyAnnotationsReadTheSameWhateverTheThreadCount) {
  const auto dataset = [](int bad_a, int bad_b) {
    std::string annotations;
    for (int i = 0; i < 10000; ++i) {
      annotations += fmt::format(
          R"({}{{"id": {}, "image_id": 7, "category_id": 1, "area": {}, "iscrowd": 0, "bbox": [0, 0, 2, 2],)"
          R"( "segmentation": [[0, 0, {}, 0, 2, 2]]}})",
          i ? "," : "", i + 1, i == bad_a || i == bad_b ? "\"big\"" : std::to_string(i % 9), i % 11);
    }
    return R"({"images": [{"id": 7, "height": 10, "width": 12}], "categories": [{"id": 1}], "annotations": [)" +
           annotations + "]}";
  };
  const std::string bad = dataset(5000, 9000), good = dataset(-1, -1);
  const CocoGroundTruth one = CocoGroundTruth::parse(good, "gt.json", 1);
  ASSERT_EQ(one.annotations().size(), 10000u);
  for (const int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    EXPECT_EQ(error_of([&] { CocoGroundTruth::parse(bad, "gt.json", threads); }),
              "gt.json: annotations[5000]: field 'area' must be a number, got string");
    const CocoGroundTruth many = CocoGroundTruth::parse(good, "gt.json", threads);
    ASSERT_EQ(many.annotations().size(), one.annotations().size());
    for (size_t i = 0; i < one.annotations().size(); ++i) {
      ASSERT_EQ(many.annotations()[i].id, one.annotations()[i].id);
      ASSERT_EQ(many.annotations()[i].area, one.annotations()[i].area);
      ASSERT_EQ(std::get<Polygons>(many.annotations()[i].segmentation),
                std::get<Polygons>(one.annotations()[i].segmentation));
    }
  }
}

TEST(CocoDetections, BoxResultsGetAreaIdsAndABoxPolygon) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const CocoDetections dt = CocoDetections::parse(gt, R"([
      {"image_id": 7, "category_id": 1, "bbox": [1.5, 2, 3, 4.25], "score": 0.9},
      {"image_id": 3, "category_id": 90, "bbox": [0, 0, 2, 2], "score": 0.1, "id": 77}])",
                                                  "dt.json");
  ASSERT_EQ(dt.detections().size(), 2u);
  const auto& d = dt.detections();
  EXPECT_EQ(d[0].id, 1);
  EXPECT_EQ(d[1].id, 2);
  EXPECT_EQ(d[0].area, 3 * 4.25);
  EXPECT_FALSE(d[0].iscrowd);
  ASSERT_TRUE(std::holds_alternative<Polygons>(d[0].segmentation));
  EXPECT_EQ(std::get<Polygons>(d[0].segmentation)[0], (std::vector<double>{1.5, 2, 1.5, 6.25, 4.5, 6.25, 4.5, 2}));
}

TEST(CocoDetections, MaskResultsGetAreaAndBoxFromTheMask) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const RunLengthMask mask = rle_from_box({2, 3, 4, 5}, 10, 12);
  const std::string counts = rle_counts_to_string(mask);
  const CocoDetections dt = CocoDetections::parse(
      gt,
      R"([{"image_id": 7, "category_id": 1, "score": 0.5, "segmentation": {"size": [10, 12], "counts": ")" + counts +
          R"("}}])",
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

// One line, as `dtrain coco-eval` prints it.
void expect_one_line(const std::string& message) {
  EXPECT_FALSE(message.empty());
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(CocoDetections, MalformedJsonIsOneLineWithTheFile) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  for (const char* text : {"[{\"image_id\": 7, ", "[1, 2", "", "[{\"image_id\": 7}]]", "nul"}) {
    const std::string e = error_of([&] { CocoDetections::parse(gt, text, "dt.json"); });
    EXPECT_EQ(e.rfind("dt.json: malformed JSON: ", 0), 0u) << text << " -> " << e;
    expect_one_line(e);
  }
  EXPECT_EQ(error_of([&] { CocoDetections::load(gt, "/nonexistent/dt.json"); }),
            "/nonexistent/dt.json: cannot open file");
}

TEST(CocoDetections, WrongTypesNameTheEntryAndTheField) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const auto error = [&](const std::string& text) {
    const std::string e = error_of([&] { CocoDetections::parse(gt, text, "dt.json"); });
    expect_one_line(e);
    return e;
  };
  const std::string ok = R"({"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1})";
  EXPECT_EQ(error("[" + ok + R"(, [1, 2]])"), "dt.json: results[1]: expected an object, got array");
  EXPECT_EQ(error(R"("results")"), "dt.json: results must be a JSON list of detections, got string");
  EXPECT_EQ(error("[" + ok + R"(, {"image_id": "7", "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}])"),
            "dt.json: results[1]: field 'image_id' must be an integer, got \"7\"");
  EXPECT_EQ(error(R"([{"image_id": 7.5, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}])"),
            "dt.json: results[0]: field 'image_id' must be an integer, got 7.5");
  EXPECT_EQ(error(R"([{"image_id": 18446744073709551615, "category_id": 1, "score": 1}])"),
            "dt.json: results[0]: field 'image_id' is out of range");
  EXPECT_EQ(error("[" + ok + R"(, {"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1], "score": null}])"),
            "dt.json: results[1]: field 'score' must be a number, got null");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": true, "bbox": [0, 0, 1, 1], "score": 1}])"),
            "dt.json: results[0]: field 'category_id' must be an integer, got true");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "bbox": [0, 0, "1", 1], "score": 1}])"),
            "dt.json: results[0]: field 'bbox' must be [x, y, width, height], got [0,0,\"1\",1]");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1, 5], "score": 1}])"),
            "dt.json: results[0]: field 'bbox' must be [x, y, width, height], got [0,0,1,1,5]");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1, "segmentation": 5}])"),
            "dt.json: results[0]: field 'segmentation' must be polygons or an RLE object, got number");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1, "segmentation": {"counts": "0"}}])"),
            "dt.json: results[0]: field 'segmentation' is an RLE without 'size' or 'counts'");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1,
                      "segmentation": {"size": [10, -12], "counts": "0"}}])"),
            "dt.json: results[0]: field 'segmentation.size' must be [height, width]");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1,
                      "segmentation": {"size": [10, 12], "counts": 120}}])"),
            "dt.json: results[0]: field 'segmentation.counts' must be a string or a list");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1,
                      "segmentation": {"size": [10, 12], "counts": [60, -1]}}])"),
            "dt.json: results[0]: field 'segmentation.counts' must hold non-negative integers");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1,
                      "segmentation": {"size": [10, 12], "counts": "1"}}, {"image_id": 7}])"),
            "dt.json: results[1]: missing field 'category_id'");
  EXPECT_EQ(error(R"([{"image_id": 7, "category_id": 1, "score": 1}])"),
            "dt.json: results[0]: needs a 'bbox' or a 'segmentation'");
}

TEST(CocoDetections, UnknownImagesAreReportedBeforeAnythingElse) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  // Entry 0 has no score, but loadRes first asserts that every image is known.
  EXPECT_EQ(error_of([&] {
              CocoDetections::parse(gt, R"([{"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1]},
                                            {"image_id": 3, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1},
                                            {"image_id": 8, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 1}])",
                                    "dt.json");
            }),
            "dt.json: results[2]: image_id 8 is not an image of the ground truth gt.json");
}

TEST(CocoDetections, TheFirstEntryDecidesBetweenBoxesAndMasks) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const std::string mask =
      R"({"size": [10, 12], "counts": ")" + rle_counts_to_string(rle_from_box({2, 3, 4, 5}, 10, 12)) + R"("})";
  // Masks first: a later entry's own bbox is kept (loadRes only fills a
  // missing one), its area is still the mask's; a box alone is not enough.
  const CocoDetections masks = CocoDetections::parse(gt,
                                                     R"([
      {"image_id": 7, "category_id": 1, "score": 0.5, "segmentation": )" +
                                                         mask + R"(},
      {"image_id": 7, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1], "segmentation": )" +
                                                         mask + R"(}])",
                                                     "dt.json");
  ASSERT_EQ(masks.detections().size(), 2u);
  EXPECT_EQ(masks.detections()[0].bbox, (BoundingBox{2, 3, 4, 5}));
  EXPECT_EQ(masks.detections()[1].bbox, (BoundingBox{0, 0, 1, 1}));
  EXPECT_EQ(masks.detections()[1].area, 20.0);
  EXPECT_TRUE(std::holds_alternative<RunLengthMask>(masks.detections()[1].segmentation));
  // The evaluator may reuse the first box, not the second.
  EXPECT_TRUE(masks.bbox_is_mask_box(masks.detections()[0]));
  EXPECT_FALSE(masks.bbox_is_mask_box(masks.detections()[1]));
  const CocoAnnotation elsewhere = masks.detections()[0];
  EXPECT_FALSE(masks.bbox_is_mask_box(elsewhere));
  EXPECT_EQ(error_of([&] {
              CocoDetections::parse(gt,
                                    R"([
      {"image_id": 7, "category_id": 1, "score": 0.5, "segmentation": )" +
                                        mask + R"(},
      {"image_id": 7, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1]}])",
                                    "dt.json");
            }),
            "dt.json: results[1]: missing field 'segmentation'");
  // An empty first bbox means masks; boxes first keep a later mask as it is,
  // undecoded, with area w*h.
  const CocoDetections empty_box = CocoDetections::parse(gt,
                                                         R"([
      {"image_id": 7, "category_id": 1, "score": 0.5, "bbox": [], "segmentation": )" +
                                                             mask + R"(}])",
                                                         "dt.json");
  EXPECT_EQ(empty_box.detections()[0].area, 20.0);
  EXPECT_EQ(empty_box.detections()[0].bbox, (BoundingBox{2, 3, 4, 5}));
  const CocoDetections boxes = CocoDetections::parse(gt,
                                                     R"([
      {"image_id": 7, "category_id": 1, "score": 0.5, "bbox": [0, 0, 2, 3]},
      {"image_id": 7, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1], "segmentation": )" +
                                                         mask + R"(}])",
                                                     "dt.json");
  EXPECT_EQ(boxes.detections()[1].area, 1.0);
  EXPECT_FALSE(boxes.bbox_is_mask_box(boxes.detections()[0]));
  ASSERT_TRUE(std::holds_alternative<CompressedRle>(boxes.detections()[1].segmentation));
  EXPECT_EQ(std::get<CompressedRle>(boxes.detections()[1].segmentation).counts,
            rle_counts_to_string(rle_from_box({2, 3, 4, 5}, 10, 12)));
}

TEST(CocoDetections, CountsWithAnEscapedBackslashAndRepeatedKeys) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  // 44 = 12 + 32: its first character is '0' + (12 | 0x20) = '\'.
  const RunLengthMask mask{10, 12, {44, 20, 56}};
  std::string counts = rle_counts_to_string(mask);
  ASSERT_EQ(counts[0], '\\');
  counts.insert(0, "\\");  // JSON escape
  // A repeated key counts once, the last one (Python's json, nlohmann).
  const CocoDetections dt = CocoDetections::parse(
      gt,
      R"([{"image_id": 7, "category_id": 1, "score": 0.1, "score": 0.5, "segmentation": {"size": [10, 12], "counts": ")" +
          counts + R"("}}])",
      "dt.json");
  EXPECT_EQ(std::get<RunLengthMask>(dt.detections()[0].segmentation), mask);
  EXPECT_EQ(dt.detections()[0].area, 20.0);
  EXPECT_EQ(dt.detections()[0].score, 0.5);
}

// Many entries with faults at 7000 and 9000: the first in file order is
// reported for every thread count.
TEST(CocoDetections, TheFirstBadEntryIsReportedWhateverTheThreadCount) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  std::string text = "[";
  for (int i = 0; i < 10000; ++i) {
    if (i) text += ",";
    text += i == 7000 || i == 9000 ? R"({"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1], "score": "high"})"
                                   : R"({"image_id": 7, "category_id": 1, "bbox": [0, 0, 1, 1], "score": 0.5})";
  }
  text += "]";
  for (const int threads : {1, 2, 3, 8}) {
    EXPECT_EQ(error_of([&] { CocoDetections::parse(gt, text, "dt.json", threads); }),
              "dt.json: results[7000]: field 'score' must be a number, got string")
        << threads << " threads";
  }
}

// A counts string inside a JSON string: '\\' is the only character of
// '0'..'o' that needs escaping.
std::string json_escaped(const std::string& counts) {
  std::string out;
  for (const char c : counts) {
    if (c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void expect_same_detections(const CocoDetections& a, const CocoDetections& b) {
  ASSERT_EQ(a.detections().size(), b.detections().size());
  for (size_t i = 0; i < a.detections().size(); ++i) {
    const CocoAnnotation& x = a.detections()[i];
    const CocoAnnotation& y = b.detections()[i];
    ASSERT_EQ(x.id, y.id);
    ASSERT_EQ(x.image_id, y.image_id);
    ASSERT_EQ(x.category_id, y.category_id);
    ASSERT_EQ(x.score, y.score);
    ASSERT_EQ(x.area, y.area);
    ASSERT_EQ(x.iscrowd, y.iscrowd);
    ASSERT_EQ(x.bbox, y.bbox);
    ASSERT_EQ(x.segmentation.index(), y.segmentation.index());
    if (const auto* p = std::get_if<Polygons>(&x.segmentation)) {
      ASSERT_EQ(*p, std::get<Polygons>(y.segmentation));
    }
    if (const auto* m = std::get_if<RunLengthMask>(&x.segmentation)) {
      ASSERT_EQ(*m, std::get<RunLengthMask>(y.segmentation));
    }
    if (const auto* c = std::get_if<CompressedRle>(&x.segmentation)) {
      const auto& d = std::get<CompressedRle>(y.segmentation);
      ASSERT_EQ(c->counts, d.counts);
      ASSERT_EQ(c->height, d.height);
      ASSERT_EQ(c->width, d.width);
    }
  }
}

TEST(CocoDetections, OneThreadAndManyGiveTheSameDetections) {
  const std::string dir = COCO_FAKE100_DIR;
  const CocoGroundTruth gt = CocoGroundTruth::load(dir + "/instances_val2014_100.json");
  for (const char* type : {"bbox", "segm"}) {
    const std::string path = dir + "/instances_val2014_fake" + type + "100_results.json";
    const CocoDetections one = CocoDetections::load(gt, path, 1);
    ASSERT_GT(one.detections().size(), 100u);
    for (const int threads : {2, 7}) {
      SCOPED_TRACE(std::string(type) + ", " + std::to_string(threads) + " threads");
      expect_same_detections(one, CocoDetections::load(gt, path, threads));
    }
  }
  // A set bigger than one task of the loader.
  std::string text = "[";
  for (int i = 0; i < 5000; ++i) {
    const RunLengthMask mask = rle_from_box({double(i % 7), double(i % 5), double(1 + i % 4), 2}, 10, 12);
    text += fmt::format(
        R"({}{{"image_id": 7, "category_id": 1, "score": {}, "segmentation": {{"size": [10, 12], "counts": "{}"}}}})",
        i ? "," : "", 1.0 / (1 + i), json_escaped(rle_counts_to_string(mask)));
  }
  text += "]";
  const CocoGroundTruth small = CocoGroundTruth::parse(kGroundTruth, "gt.json");
  const CocoDetections one = CocoDetections::parse(small, text, "dt.json", 1);
  ASSERT_EQ(one.detections().size(), 5000u);
  EXPECT_EQ(one.detections()[4999].id, 5000);
  expect_same_detections(one, CocoDetections::parse(small, text, "dt.json", 4));
}

}  // namespace
}  // namespace dtrain::vision
