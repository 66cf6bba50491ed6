#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "vision/data/coco_dataset.h"
#include "vision/data/image_codec.h"
#include "vision/data/instance_targets.h"
#include "vision/data/mask_contour.h"
#include "vision/data/synthetic_mnist.h"
#include "vision/data/synthetic_shapes.h"
#include "vision/coco/coco_error.h"
#include "vision/evaluation/coco_evaluator.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_merge.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/segmentation_mask.h"

namespace dtrain::vision {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool have_mnist() { return fs::exists(fs::path(MNIST_DIR) / "t10k-images-idx3-ubyte"); }

SyntheticSpec spec_for(const fs::path& out, int threads) {
  SyntheticSpec spec;
  spec.out_dir = out.string();
  spec.train = 12;
  spec.val = 5;
  spec.size = 96;
  spec.min_size = 64;
  spec.seed = 42;
  spec.threads = threads;
  return spec;
}

// Every file under `a` equals the one under `b`, and both have the same files.
void expect_identical_trees(const fs::path& a, const fs::path& b) {
  std::set<std::string> names_a, names_b;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (e.is_regular_file()) names_a.insert(fs::relative(e.path(), a).string());
  }
  for (const auto& e : fs::recursive_directory_iterator(b)) {
    if (e.is_regular_file()) names_b.insert(fs::relative(e.path(), b).string());
  }
  ASSERT_EQ(names_a, names_b);
  for (const auto& name : names_a) EXPECT_EQ(read_text(a / name), read_text(b / name)) << name;
}

// Feeds the ground truth back as detections with score 1 and evaluates.
double self_ap(const std::string& gt_path, IouType type) {
  const CocoGroundTruth gt = CocoGroundTruth::load(gt_path);
  nlohmann::json results = nlohmann::json::array();
  for (const CocoAnnotation& a : gt.annotations()) {
    nlohmann::json r = {{"image_id", a.image_id}, {"category_id", a.category_id}, {"score", 1.0}};
    if (type == IouType::kBbox) {
      r["bbox"] = {a.bbox.x, a.bbox.y, a.bbox.width, a.bbox.height};
    } else {
      const CocoImage* image = gt.find_image(a.image_id);
      const RunLengthMask mask = segmentation_mask(a.segmentation, image->height, image->width);
      r["segmentation"] = {{"size", {mask.height, mask.width}}, {"counts", rle_counts_to_string(mask)}};
    }
    results.push_back(r);
  }
  const CocoDetections dt = CocoDetections::parse(gt, results.dump(), "self.json");
  CocoEvaluator evaluator(gt, dt, type, 2);
  evaluator.evaluate();
  evaluator.accumulate();
  const CocoSummary summary = evaluator.summarize();
  return summary.stats[0].value;
}

// Masks of one image never overlap, and each covers pixels of one colour
// (the shape drawn there), so occlusion is resolved in the masks.
void expect_disjoint_masks(const CocoDataset& ds, bool uniform_colour) {
  size_t instances = 0, overlapping_boxes = 0;
  for (const DatasetImage& image : ds.images()) {
    const InstanceTargets t = make_instance_targets(ds, image);
    ASSERT_GT(t.size(), 0u) << image.file_name;
    const RgbImage pixels = read_image(ds.image_path(image));
    const size_t plane = size_t{t.height} * t.width;
    std::vector<int> owner(plane, -1);
    for (size_t k = 0; k < t.size(); ++k) {
      ++instances;
      size_t area = 0;
      std::set<std::array<uint8_t, 3>> colours;
      for (size_t p = 0; p < plane; ++p) {
        if (!t.mask(k)[p]) continue;
        ++area;
        ASSERT_EQ(owner[p], -1) << image.file_name << ": instances " << owner[p] << " and " << k << " overlap";
        owner[p] = static_cast<int>(k);
        const uint8_t* c = pixels.pixels.data() + 3 * p;
        colours.insert({c[0], c[1], c[2]});
      }
      EXPECT_GT(area, 0u);
      if (uniform_colour) {
        EXPECT_EQ(colours.size(), 1u) << image.file_name << " instance " << k;
      }
      for (size_t j = 0; j < k; ++j) {
        const auto& a = t.boxes[j];
        const auto& b = t.boxes[k];
        if (a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]) ++overlapping_boxes;
      }
    }
  }
  EXPECT_GT(instances, ds.images().size());
  EXPECT_GT(overlapping_boxes, 0u) << "no occlusion was exercised";
}

TEST(MaskContour, PolygonsRasteriseBackToTheRegion) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t h = 10 + rng() % 30, w = 10 + rng() % 30;
    std::vector<uint8_t> mask(size_t{h} * w, 0);
    // Two convex blobs (discs) never enclose a hole.
    for (int k = 0; k < 2; ++k) {
      const double cx = rng() % w, cy = rng() % h, r = 1 + rng() % 8;
      for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) {
          if ((x + 0.5 - cx) * (x + 0.5 - cx) + (y + 0.5 - cy) * (y + 0.5 - cy) <= r * r) {
            mask[y * w + x] = 1;
          }
        }
      }
    }
    const Polygons polygons = trace_outer_contours(mask, h, w);
    std::vector<RunLengthMask> parts;
    for (const auto& p : polygons) parts.push_back(rle_from_polygon(p, h, w));
    std::vector<uint8_t> back(mask.size(), 0);
    if (!parts.empty()) rle_to_row_major(rle_merge(parts), back.data());
    ASSERT_EQ(back, mask) << "trial " << trial;
  }
  // Two diagonal pixels are two regions; a ring comes back filled.
  const std::vector<uint8_t> diagonal = {1, 0, 0, 1};
  EXPECT_EQ(trace_outer_contours(diagonal, 2, 2).size(), 2u);
  std::vector<uint8_t> ring(25, 1);
  ring[12] = 0;
  const Polygons ring_polygons = trace_outer_contours(ring, 5, 5);
  ASSERT_EQ(ring_polygons.size(), 1u);
  EXPECT_EQ(ring_polygons[0], (std::vector<double>{-0.5, -0.5, 4.5, -0.5, 4.5, 4.5, -0.5, 4.5}));
}

TEST(SyntheticShapes, DeterministicForASeedWhateverTheThreads) {
  testing::TempDir a, b, c;
  make_shapes_dataset(spec_for(a.path(), 1));
  make_shapes_dataset(spec_for(b.path(), 2));
  expect_identical_trees(a.path(), b.path());
  SyntheticSpec other = spec_for(c.path(), 2);
  other.seed = 43;
  make_shapes_dataset(other);
  EXPECT_NE(read_text(a.path() / "annotations/instances_train.json"),
            read_text(c.path() / "annotations/instances_train.json"));
}

TEST(SyntheticShapes, WritesCountsCategoriesPolygonsAndProgress) {
  testing::TempDir dir;
  SyntheticSpec spec = spec_for(dir.path(), 2);
  std::vector<std::string> progress;
  spec.progress = [&](const std::string& line) { progress.push_back(line); };
  make_shapes_dataset(spec);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path() / "train"), fs::directory_iterator()), 12);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path() / "val"), fs::directory_iterator()), 5);
  EXPECT_NE(std::find(progress.begin(), progress.end(), "wrote 12/12 train images"), progress.end());
  EXPECT_NE(std::find(progress.begin(), progress.end(), "wrote 5/5 val images"), progress.end());

  const auto json = nlohmann::json::parse(read_text(dir.path() / "annotations/instances_train.json"));
  ASSERT_EQ(json["categories"].size(), 3u);
  EXPECT_EQ(json["categories"][0]["name"], "square");
  EXPECT_EQ(json["categories"][1]["name"], "circle");
  EXPECT_EQ(json["categories"][2]["id"], 3);
  EXPECT_EQ(json["images"].size(), 12u);
  for (const auto& a : json["annotations"]) {
    EXPECT_TRUE(a["segmentation"].is_array());
    EXPECT_EQ(a["iscrowd"], 0);
    EXPECT_GT(a["area"].get<double>(), 0);
    EXPECT_GT(a["bbox"][2].get<double>(), 0);
  }
  // Sizes drawn in [min_size, size].
  std::set<uint32_t> widths;
  for (const auto& image : json["images"]) {
    const auto w = image["width"].get<uint32_t>(), h = image["height"].get<uint32_t>();
    EXPECT_TRUE(w >= 64 && w <= 96 && h >= 64 && h <= 96);
    widths.insert(w);
  }
  EXPECT_GT(widths.size(), 1u);
}

TEST(SyntheticShapes, OcclusionLeavesDisjointMasksOfVisibleParts) {
  testing::TempDir dir;
  SyntheticSpec spec = spec_for(dir.path(), 2);
  spec.train = 40;
  spec.val = 0;
  make_shapes_dataset(spec);
  const CocoDataset ds = CocoDataset::load(dir / "annotations/instances_train.json", dir / "train");
  expect_disjoint_masks(ds, /*uniform_colour=*/true);
  // The area recorded is the mask's pixel count.
  for (const DatasetImage& image : ds.images()) {
    const InstanceTargets t = make_instance_targets(ds, image);
    const auto annotations = ds.annotations_of(image);
    for (size_t k = 0; k < t.size(); ++k) {
      size_t area = 0;
      for (size_t p = 0; p < size_t{t.height} * t.width; ++p) area += t.mask(k)[p];
      EXPECT_EQ(static_cast<double>(area), annotations[k].area);
    }
  }
}

TEST(SyntheticShapes, GroundTruthAsDetectionsScoresApOne) {
  testing::TempDir dir;
  make_shapes_dataset(spec_for(dir.path(), 2));
  for (const char* split : {"train", "val"}) {
    const std::string gt = dir / (std::string("annotations/instances_") + split + ".json");
    EXPECT_NEAR(self_ap(gt, IouType::kBbox), 1.0, 1e-6) << split;
    EXPECT_NEAR(self_ap(gt, IouType::kSegm), 1.0, 1e-6) << split;
  }
}

TEST(SyntheticMnist, DeterministicRleMasksAndApOne) {
  if (!have_mnist()) GTEST_SKIP() << "MNIST idx files not in " << MNIST_DIR << " (run scripts/setup)";
  testing::TempDir a, b;
  SyntheticSpec spec = spec_for(a.path(), 1);
  spec.size = 128;
  spec.min_size = 96;
  make_mnist_instances_dataset(spec, MNIST_DIR);
  spec.out_dir = b.path().string();
  spec.threads = 2;
  make_mnist_instances_dataset(spec, MNIST_DIR);
  expect_identical_trees(a.path(), b.path());

  const auto json = nlohmann::json::parse(read_text(a.path() / "annotations/instances_train.json"));
  ASSERT_EQ(json["categories"].size(), 10u);
  for (int d = 0; d < 10; ++d) {
    EXPECT_EQ(json["categories"][d]["id"], d + 1);
    EXPECT_EQ(json["categories"][d]["name"], std::to_string(d));
  }
  for (const auto& ann : json["annotations"]) {
    ASSERT_TRUE(ann["segmentation"]["counts"].is_string());
    EXPECT_GT(ann["area"].get<double>(), 0);
  }
  const CocoDataset ds = CocoDataset::load(a / "annotations/instances_train.json", a / "train");
  ASSERT_EQ(ds.images().size(), 12u);
  expect_disjoint_masks(ds, /*uniform_colour=*/false);
  for (const char* split : {"train", "val"}) {
    const std::string gt = a / (std::string("annotations/instances_") + split + ".json");
    EXPECT_NEAR(self_ap(gt, IouType::kBbox), 1.0, 1e-6) << split;
    EXPECT_NEAR(self_ap(gt, IouType::kSegm), 1.0, 1e-6) << split;
  }
}

TEST(SyntheticMnist, MissingMnistIsAnError) {
  testing::TempDir dir;
  EXPECT_THROW(make_mnist_instances_dataset(spec_for(dir.path(), 1), dir / "nowhere"), CocoError);
}

}  // namespace
}  // namespace dtrain::vision
