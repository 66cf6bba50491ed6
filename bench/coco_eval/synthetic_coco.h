#pragma once

#include <cstdint>
#include <string>

#include "bench/coco_eval/generator_support.h"

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

// The same spec gives the same bytes on every run and for every thread count.
GeneratedCocoSet generate_synthetic_coco(const SyntheticCocoSpec& spec, int threads);

}  // namespace dtrain::bench
