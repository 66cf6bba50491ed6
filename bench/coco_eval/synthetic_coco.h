#pragma once

#include <cstdint>
#include <string>

namespace dtrain::bench {

// The shape of a synthetic COCO evaluation set, by default like COCO val2017
// with a Mask R-CNN's results: 5,000 images of 640x480 (a third portrait),
// 80 categories (person the most common), ~7 objects per image as polygons
// (1% crowds as uncompressed RLE), and 100 detections per image: a few near
// each object (sometimes with the wrong class) and low-scored clutter.
struct SyntheticCocoSpec {
  int images = 5000;
  int categories = 80;
  int detections_per_image = 100;
  uint64_t seed = 2017;
};

// COCO-format JSON texts. The same spec gives the same bytes on every run and
// for every thread count.
struct SyntheticCoco {
  std::string ground_truth;  // instances_*.json
  std::string box_results;   // [{image_id, category_id, bbox, score}]
  std::string mask_results;  // [{image_id, category_id, segmentation (compressed RLE), score}]
  size_t annotations = 0;
  size_t detections = 0;
};

SyntheticCoco generate_synthetic_coco(const SyntheticCocoSpec& spec, int threads);

}  // namespace dtrain::bench
