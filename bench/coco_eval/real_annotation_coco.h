#pragma once

#include <cstdint>
#include <string>

#include "bench/coco_eval/generator_support.h"

namespace dtrain::bench {

// A val2017-sized evaluation set made of real COCO annotations: a small real
// ground truth (tests/data/coco-fake100: 100 val2014 images, their polygons
// with many vertices, crowd regions as RLE, real image sizes) replicated under
// new image and annotation ids until it has `images` images, and a detector's
// results perturbed from it: one to three detections per object (shifted,
// scaled and jittered outlines, sometimes the wrong class), filled up to
// `detections_per_image` with pure false positives (real outlines of other
// objects at random places), scores with three decimals so that many tie.
struct RealAnnotationCocoSpec {
  int images = 5000;
  int detections_per_image = 100;
  uint64_t seed = 2014;
};

// Same spec and source, same bytes, on every run and for every thread count.
// Throws vision::CocoError when the source is not COCO instances JSON.
GeneratedCocoSet generate_real_annotation_coco(const std::string& source_ground_truth,
                                               const RealAnnotationCocoSpec& spec, int threads);

}  // namespace dtrain::bench
