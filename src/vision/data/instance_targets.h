#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "vision/data/coco_dataset.h"
#include "vision/coco/coco_annotation.h"

namespace dtrain::vision {

// The training targets of one image at its current resolution, aligned by
// instance: boxes (x1, y1, x2, y2) in pixels, contiguous labels 1..K, and
// one height x width row-major 0/1 mask per instance.
struct InstanceTargets {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<std::array<float, 4>> boxes;
  std::vector<int64_t> labels;
  std::vector<uint8_t> masks;  // size() * height * width

  size_t size() const { return labels.size(); }
  uint8_t* mask(size_t i) { return masks.data() + i * size_t{height} * width; }
  const uint8_t* mask(size_t i) const { return masks.data() + i * size_t{height} * width; }

  friend bool operator==(const InstanceTargets&, const InstanceTargets&) = default;
};

// torchvision's ConvertCocoPolysToMask for one image: crowd annotations are
// dropped; boxes go from [x, y, w, h] to corners clipped to the image, and
// only boxes with x2 > x1 and y2 > y1 stay; masks are the segmentations
// rasterised as COCO's annToRLE does (polygons through the evaluation mask
// API, RLEs decoded; an annotation without a segmentation gets its box).
InstanceTargets make_instance_targets(const CocoDataset& dataset, const DatasetImage& image);

// The mask of a segmentation as row-major 0/1 bytes written into `out`
// (height * width bytes, which must be zero on entry).
void rasterize_segmentation(const Segmentation& segmentation, const BoundingBox& box, uint32_t height, uint32_t width,
                            uint8_t* out);

// Column-major RLE into row-major 0/1 bytes (out zeroed, height * width).
void rle_to_row_major(const RunLengthMask& mask, uint8_t* out);

}  // namespace dtrain::vision
