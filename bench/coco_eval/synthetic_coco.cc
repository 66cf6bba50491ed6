#include "bench/coco_eval/synthetic_coco.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include <fmt/format.h>

#include "bench/coco_eval/generator_support.h"
#include "concurrency/parallel_for.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_string.h"

namespace dtrain::bench {
namespace {

using vision::RunLengthMask;

using Random = SplitMixRandom;

struct Shape {
  double cx, cy, rx, ry;      // ellipse-like outline
  std::vector<double> radii;  // per-vertex wobble
  double phase;
};

std::vector<double> outline(const Shape& s, double dx, double dy, double scale) {
  std::vector<double> xy;
  const size_t n = s.radii.size();
  xy.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const double angle = s.phase + 2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(n);
    xy.push_back(s.cx + dx + scale * s.rx * s.radii[i] * std::cos(angle));
    xy.push_back(s.cy + dy + scale * s.ry * s.radii[i] * std::sin(angle));
  }
  return xy;
}

// Box of a polygon clipped to the image, in COCO's [x, y, w, h].
std::array<double, 4> polygon_box(const std::vector<double>& xy, double width, double height) {
  double x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9;
  for (size_t i = 0; i < xy.size(); i += 2) {
    x0 = std::min(x0, xy[i]);
    x1 = std::max(x1, xy[i]);
    y0 = std::min(y0, xy[i + 1]);
    y1 = std::max(y1, xy[i + 1]);
  }
  x0 = std::clamp(x0, 0.0, width);
  x1 = std::clamp(x1, 0.0, width);
  y0 = std::clamp(y0, 0.0, height);
  y1 = std::clamp(y1, 0.0, height);
  return {x0, y0, x1 - x0, y1 - y0};
}

void clip_polygon(std::vector<double>& xy, double width, double height) {
  for (size_t i = 0; i < xy.size(); i += 2) {
    xy[i] = std::clamp(xy[i], 0.0, width);
    xy[i + 1] = std::clamp(xy[i + 1], 0.0, height);
  }
}

struct ImageText {
  std::string image, annotations, boxes, masks;
  size_t annotation_count = 0, detection_count = 0;
};

int pick_category(Random& rng, int categories) {
  // Person (id 1) is about a quarter of COCO's objects.
  return rng.chance(0.25) ? 0 : rng.integer(0, categories - 1);
}

// COCO's category ids are 1..90 with gaps; keep that shape.
int64_t category_id(int index) { return index + 1 + index / 12; }

ImageText generate_image(const SyntheticCocoSpec& spec, int index, uint64_t& next_annotation_id) {
  Random rng(spec.seed * 1000003ull + static_cast<uint64_t>(index));
  ImageText out;
  const int64_t image_id = 100000 + static_cast<int64_t>(index) * 7;
  const bool portrait = rng.chance(1.0 / 3);
  const uint32_t width = portrait ? 480 : 640, height = portrait ? 640 : 480;
  out.image =
      fmt::format(R"({{"id":{},"width":{},"height":{},"file_name":"{:012d}.jpg"}})", image_id, width, height, image_id);

  const int objects = rng.integer(1, 13);
  std::vector<std::pair<Shape, int>> shapes;
  for (int o = 0; o < objects; ++o) {
    Shape s;
    // Sizes spread over COCO's small / medium / large ranges.
    const double side = std::exp(rng.uniform(std::log(8.0), std::log(420.0)));
    const double aspect = std::exp(rng.uniform(-0.7, 0.7));
    s.rx = side * aspect / 2;
    s.ry = side / aspect / 2;
    s.cx = rng.uniform(0, width);
    s.cy = rng.uniform(0, height);
    s.phase = rng.uniform(0, 2 * std::numbers::pi);
    s.radii.resize(static_cast<size_t>(rng.integer(10, 32)));
    for (double& r : s.radii) r = rng.uniform(0.75, 1.0);
    shapes.emplace_back(std::move(s), pick_category(rng, spec.categories));
  }

  auto append = [](std::string& list, const std::string& item) {
    if (!list.empty()) list += ',';
    list += item;
  };
  for (const auto& [shape, category] : shapes) {
    std::vector<double> xy = outline(shape, 0, 0, 1);
    clip_polygon(xy, width, height);
    const auto box = polygon_box(xy, width, height);
    const RunLengthMask mask = vision::rle_from_polygon(xy, height, width);
    const uint32_t area = vision::rle_area(mask);
    const bool crowd = rng.chance(0.01);
    std::string segmentation;
    if (crowd) {
      segmentation = fmt::format(R"({{"counts":[{}],"size":[{},{}]}})", fmt::join(mask.counts, ","), height, width);
    } else {
      segmentation = fmt::format("[[{:.2f}]]", fmt::join(xy, ","));
    }
    append(out.annotations, fmt::format(R"({{"id":{},"image_id":{},"category_id":{},"iscrowd":{},"area":{},)"
                                        R"("bbox":[{:.2f},{:.2f},{:.2f},{:.2f}],"segmentation":{}}})",
                                        next_annotation_id++, image_id, category_id(category), crowd ? 1 : 0, area,
                                        box[0], box[1], box[2], box[3], segmentation));
    ++out.annotation_count;
  }

  auto add_detection = [&](const Shape& shape, int category, double dx, double dy, double scale, double score) {
    std::vector<double> xy = outline(shape, dx, dy, scale);
    for (double& v : xy) v += rng.uniform(-1.5, 1.5);
    clip_polygon(xy, width, height);
    const auto box = polygon_box(xy, width, height);
    const RunLengthMask mask = vision::rle_from_polygon(xy, height, width);
    append(out.boxes,
           fmt::format(R"({{"image_id":{},"category_id":{},"bbox":[{:.2f},{:.2f},{:.2f},{:.2f}],"score":{:.5f}}})",
                       image_id, category_id(category), box[0], box[1], box[2], box[3], score));
    append(out.masks,
           fmt::format(
               R"({{"image_id":{},"category_id":{},"segmentation":{{"size":[{},{}],"counts":"{}"}},"score":{:.5f}}})",
               image_id, category_id(category), height, width, json_escaped_counts(vision::rle_counts_to_string(mask)),
               score));
    ++out.detection_count;
  };

  int made = 0;
  for (const auto& [shape, category] : shapes) {
    const int near = rng.integer(1, 3);
    for (int n = 0; n < near && made < spec.detections_per_image; ++n, ++made) {
      const double spread = rng.uniform(0.0, 0.25);
      const int label = rng.chance(0.15) ? pick_category(rng, spec.categories) : category;
      add_detection(shape, label, spread * shape.rx * rng.uniform(-1, 1), spread * shape.ry * rng.uniform(-1, 1),
                    rng.uniform(0.8, 1.2), rng.uniform(0.3, 1.0) * (1 - spread));
    }
  }
  // Clutter: low-scored detections of random things, as detectors emit to reach 100.
  for (; made < spec.detections_per_image; ++made) {
    Shape s;
    const double side = std::exp(rng.uniform(std::log(6.0), std::log(300.0)));
    s.rx = side / 2;
    s.ry = side * rng.uniform(0.5, 1.5) / 2;
    s.cx = rng.uniform(0, width);
    s.cy = rng.uniform(0, height);
    s.phase = 0;
    s.radii.assign(static_cast<size_t>(rng.integer(8, 20)), 0.9);
    add_detection(s, pick_category(rng, spec.categories), 0, 0, 1, rng.uniform(0.001, 0.3));
  }
  return out;
}

}  // namespace

GeneratedCocoSet generate_synthetic_coco(const SyntheticCocoSpec& spec, int threads) {
  std::vector<ImageText> images(static_cast<size_t>(spec.images));
  // Annotation ids depend only on the image: 100 ids reserved per image.
  concurrency::parallel_for(images.size(), threads, [&](size_t i) {
    uint64_t next_id = 1 + i * 100;
    images[i] = generate_image(spec, static_cast<int>(i), next_id);
  });

  GeneratedCocoSet out;
  std::string image_list, annotation_list, categories;
  for (int k = 0; k < spec.categories; ++k) {
    if (k) categories += ',';
    categories +=
        fmt::format(R"({{"id":{},"name":"class{}","supercategory":"thing"}})", category_id(k), category_id(k));
  }
  out.box_results = "[";
  out.mask_results = "[";
  bool first_box = true, first_mask = true;
  for (const auto& image : images) {
    if (!image_list.empty()) image_list += ',';
    image_list += image.image;
    if (!image.annotations.empty()) {
      if (!annotation_list.empty()) annotation_list += ',';
      annotation_list += image.annotations;
    }
    if (!image.boxes.empty()) {
      if (!first_box) out.box_results += ',';
      out.box_results += image.boxes;
      first_box = false;
    }
    if (!image.masks.empty()) {
      if (!first_mask) out.mask_results += ',';
      out.mask_results += image.masks;
      first_mask = false;
    }
    out.annotations += image.annotation_count;
    out.detections += image.detection_count;
  }
  out.box_results += "]";
  out.mask_results += "]";
  out.ground_truth = fmt::format(R"({{"info":{{"description":"dtrain synthetic COCO"}},"images":[{}],)"
                                 R"("annotations":[{}],"categories":[{}]}})",
                                 image_list, annotation_list, categories);
  return out;
}

}  // namespace dtrain::bench
