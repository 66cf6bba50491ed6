#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vision/data/coco_dataset.h"
#include "vision/data/instance_targets.h"
#include "vision/coco/coco_error.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {
namespace {

using nlohmann::json;

// A 10 x 8 (h x w) mask with a 3 x 2 block at rows 2..4, columns 1..2.
RunLengthMask block_mask() {
  std::vector<uint8_t> column_major(80, 0);
  for (int x = 1; x <= 2; ++x) {
    for (int y = 2; y <= 4; ++y) column_major[x * 10 + y] = 1;
  }
  return rle_encode(column_major, 10, 8);
}

json base_dataset() {
  const RunLengthMask block = block_mask();
  json d;
  d["images"] = json::array({
      {{"id", 7}, {"file_name", "a.jpg"}, {"height", 10}, {"width", 8}},
      {{"id", 3}, {"file_name", "b.png"}, {"height", 20}, {"width", 30}},
      {{"id", 9}, {"file_name", "c.png"}, {"height", 10}, {"width", 8}},
      {{"id", 11}, {"file_name", "d.png"}, {"height", 10}, {"width", 8}},
  });
  // Non-contiguous ids, not in order.
  d["categories"] = json::array(
      {{{"id", 90}, {"name", "toothbrush"}}, {{"id", 1}, {"name", "person"}}, {{"id", 5}, {"name", "airplane"}}});
  d["annotations"] = json::array({
      // image 7: polygon, compressed RLE, uncompressed RLE crowd
      {{"id", 100},
       {"image_id", 7},
       {"category_id", 5},
       {"bbox", {1, 1, 4, 4}},
       {"area", 16},
       {"iscrowd", 0},
       {"segmentation", json::array({json::array({1, 1, 5, 1, 5, 5, 1, 5})})}},
      {{"id", 101},
       {"image_id", 7},
       {"category_id", 90},
       {"bbox", {1, 2, 2, 3}},
       {"area", 6},
       {"iscrowd", 0},
       {"segmentation", {{"size", {10, 8}}, {"counts", rle_counts_to_string(block)}}}},
      {{"id", 102},
       {"image_id", 7},
       {"category_id", 1},
       {"bbox", {1, 2, 2, 3}},
       {"area", 6},
       {"iscrowd", 1},
       {"segmentation", {{"size", {10, 8}}, {"counts", block.counts}}}},
      // image 3: one box hanging off the right edge, one degenerate after clipping
      {{"id", 103}, {"image_id", 3}, {"category_id", 1}, {"bbox", {25, 5, 10, 10}}, {"area", 50}, {"iscrowd", 0}},
      {{"id", 104}, {"image_id", 3}, {"category_id", 1}, {"bbox", {31, 5, 4, 4}}, {"area", 16}, {"iscrowd", 0}},
      // image 9: only a tiny box (w <= 1): dropped from training
      {{"id", 105}, {"image_id", 9}, {"category_id", 1}, {"bbox", {1, 1, 1, 5}}, {"area", 5}, {"iscrowd", 0}},
      // image 11: nothing but a crowd; torchvision keeps the image, with no targets
      {{"id", 106},
       {"image_id", 11},
       {"category_id", 1},
       {"bbox", {1, 2, 2, 3}},
       {"area", 6},
       {"iscrowd", 1},
       {"segmentation", {{"size", {10, 8}}, {"counts", block.counts}}}},
  });
  return d;
}

CocoDataset parse(const json& d, const CocoDatasetOptions& options = {}) {
  return CocoDataset::parse(d.dump(), "instances.json", "/images", options);
}

std::string error_of(const json& d) {
  try {
    parse(d);
  } catch (const CocoError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CocoDataset, IndexesImagesAnnotationsAndAllSegmentationKinds) {
  const CocoDataset ds = parse(base_dataset());
  ASSERT_EQ(ds.images().size(), 4u);
  EXPECT_EQ(ds.images()[1].id, 3);
  EXPECT_EQ(ds.images()[1].file_name, "b.png");
  EXPECT_EQ(ds.image_path(ds.images()[1]), "/images/b.png");
  ASSERT_NE(ds.find_image(9), nullptr);
  EXPECT_EQ(ds.find_image(9)->file_name, "c.png");
  EXPECT_EQ(ds.find_image(4), nullptr);

  const auto a7 = ds.annotations_of(*ds.find_image(7));
  ASSERT_EQ(a7.size(), 3u);
  EXPECT_EQ(a7[0].id, 100);
  EXPECT_TRUE(std::holds_alternative<Polygons>(a7[0].segmentation));
  EXPECT_TRUE(std::holds_alternative<CompressedRle>(a7[1].segmentation));
  EXPECT_TRUE(std::holds_alternative<RunLengthMask>(a7[2].segmentation));
  EXPECT_TRUE(a7[2].iscrowd);
  EXPECT_EQ(ds.annotations_of(*ds.find_image(3)).size(), 2u);
  EXPECT_EQ(ds.annotations().size(), 7u);
}

TEST(CocoDataset, MapsNonContiguousCategoryIdsToLabelsAndBack) {
  const CocoDataset ds = parse(base_dataset());
  ASSERT_EQ(ds.num_classes(), 3u);
  EXPECT_EQ(ds.label(1), 1);
  EXPECT_EQ(ds.label(5), 2);
  EXPECT_EQ(ds.label(90), 3);
  EXPECT_EQ(ds.label(2), 0);
  for (int64_t label = 1; label <= 3; ++label) EXPECT_EQ(ds.label(ds.category_id(label)), label);
  for (int64_t id : {1, 5, 90}) EXPECT_EQ(ds.category_id(ds.label(id)), id);
  EXPECT_EQ(ds.category_id(0), 0);
  EXPECT_EQ(ds.category_id(4), 0);
  EXPECT_EQ(ds.categories()[2].name, "toothbrush");
}

TEST(CocoDataset, TrainingKeepsImagesAsTorchvisionsReference) {
  const CocoDataset ds = parse(base_dataset());
  // 9 has only a box with w <= 1; 11 keeps its crowd-only annotation.
  EXPECT_EQ(ds.training_indices(), (std::vector<uint32_t>{0, 1, 3}));
  EXPECT_EQ(ds.all_indices(), (std::vector<uint32_t>{0, 1, 2, 3}));
}

TEST(CocoDataset, TargetsDropCrowdsAndDegenerateBoxesAndRasteriseMasks) {
  const CocoDataset ds = parse(base_dataset());
  const InstanceTargets t7 = make_instance_targets(ds, *ds.find_image(7));
  ASSERT_EQ(t7.size(), 2u);  // the crowd is gone
  EXPECT_EQ(t7.labels, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(t7.boxes[0], (std::array<float, 4>{1, 1, 5, 5}));
  // The compressed RLE block: rows 2..4, columns 1..2, row-major.
  const uint8_t* m = t7.mask(1);
  int on = 0;
  for (int y = 0; y < 10; ++y) {
    for (int x = 0; x < 8; ++x) {
      const bool inside = y >= 2 && y <= 4 && x >= 1 && x <= 2;
      EXPECT_EQ(m[y * 8 + x], inside ? 1 : 0) << x << "," << y;
      on += m[y * 8 + x];
    }
  }
  EXPECT_EQ(on, 6);
  // The polygon's mask is COCO's rasterisation of the square.
  int polygon_pixels = 0;
  for (int i = 0; i < 80; ++i) polygon_pixels += t7.mask(0)[i];
  EXPECT_GT(polygon_pixels, 9);

  const InstanceTargets t3 = make_instance_targets(ds, *ds.find_image(3));
  ASSERT_EQ(t3.size(), 1u);  // 104 lies beyond the right edge: zero width after clipping
  EXPECT_EQ(t3.boxes[0], (std::array<float, 4>{25, 5, 30, 15}));
  // No segmentation: the box is the mask.
  int box_pixels = 0;
  for (uint8_t v : t3.masks) box_pixels += v;
  EXPECT_GT(box_pixels, 0);

  EXPECT_EQ(make_instance_targets(ds, *ds.find_image(11)).size(), 0u);
}

TEST(CocoDatasetErrors, MalformedJsonNamesTheFile) {
  try {
    CocoDataset::parse("{\"images\": [", "instances.json", "");
    FAIL();
  } catch (const CocoError& e) {
    EXPECT_NE(std::string(e.what()).find("instances.json: malformed JSON"), std::string::npos) << e.what();
  }
  EXPECT_NE(error_of(json::array()).find("instances.json: expected a COCO dataset object"), std::string::npos);
  EXPECT_THROW(CocoDataset::load("/nonexistent/instances.json", ""), CocoError);
}

TEST(CocoDatasetErrors, ShortPolygonNamesFileEntryAndId) {
  json d = base_dataset();
  d["annotations"][5]["segmentation"] = json::array({json::array({1, 1, 5, 1})});
  EXPECT_EQ(error_of(d), "instances.json: annotations[5] (id 105): polygon has 2 points, needs at least 3");
  d["annotations"][5]["segmentation"] = json::array({json::array({1, 1, 5, 1, 5, 5}), json::array({1, 1})});
  EXPECT_EQ(error_of(d), "instances.json: annotations[5] (id 105): polygon 1 has 1 point, needs at least 3");
}

TEST(CocoDatasetErrors, UnknownImageOrCategoryNamesTheEntry) {
  json d = base_dataset();
  d["annotations"][2]["image_id"] = 12345;
  EXPECT_EQ(error_of(d), "instances.json: annotations[2] (id 102): image_id 12345 is not in 'images'");
  d = base_dataset();
  d["annotations"][3]["category_id"] = 2;
  EXPECT_EQ(error_of(d), "instances.json: annotations[3] (id 103): category_id 2 is not in 'categories'");
}

TEST(CocoDatasetErrors, BadFieldsNameTheEntry) {
  json d = base_dataset();
  d["images"][1].erase("file_name");
  EXPECT_EQ(error_of(d), "instances.json: images[1] (id 3): missing field 'file_name'");
  d = base_dataset();
  d["annotations"][0]["bbox"] = {1, 2, 3};
  EXPECT_EQ(error_of(d).rfind("instances.json: annotations[0] (id 100): field 'bbox' must be", 0), 0u) << error_of(d);
  d = base_dataset();
  d["annotations"][1]["segmentation"]["size"] = {11, 8};
  EXPECT_EQ(error_of(d),
            "instances.json: annotations[1] (id 101): segmentation RLE size [11, 8] differs from the "
            "image's [10, 8]");
  d = base_dataset();
  d["annotations"][2]["segmentation"]["counts"] = {1, 2, 3};
  EXPECT_EQ(error_of(d).rfind("instances.json: annotations[2] (id 102): segmentation RLE counts cover 6 "
                              "pixels",
                              0),
            0u);
  d = base_dataset();
  d["images"][2]["id"] = 7;
  EXPECT_EQ(error_of(d), "instances.json: images[2] (id 7): duplicate image id");
  d = base_dataset();
  d["annotations"][0]["id"] = "x";
  EXPECT_EQ(error_of(d).rfind("instances.json: annotations[0]: field 'id' must be an integer", 0), 0u);
}

TEST(CocoDatasetErrors, SkipPolicyWarnsAndLeavesTheSampleOut) {
  json d = base_dataset();
  d["annotations"][0]["segmentation"] = json::array({json::array({1, 1, 5, 1})});  // image 7
  d["annotations"][4]["image_id"] = 4242;                                          // unknown image
  std::vector<std::string> warnings;
  CocoDatasetOptions options;
  options.policy = BadInputPolicy::kSkip;
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  const CocoDataset ds = parse(d, options);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0],
            "instances.json: annotations[0] (id 100): polygon has 2 points, needs at least 3; "
            "skipping image 7");
  EXPECT_EQ(warnings[1],
            "instances.json: annotations[4] (id 104): image_id 4242 is not in 'images'; skipping "
            "the annotation");
  EXPECT_TRUE(ds.find_image(7)->unusable);
  EXPECT_EQ(ds.training_indices(), (std::vector<uint32_t>{1, 3}));
  EXPECT_EQ(ds.annotations_of(*ds.find_image(3)).size(), 1u);
  // Malformed JSON is never skipped.
  EXPECT_THROW(CocoDataset::parse("{", "x.json", "", options), CocoError);
}

}  // namespace
}  // namespace dtrain::vision
