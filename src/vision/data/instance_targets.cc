#include "vision/data/instance_targets.h"

#include <algorithm>
#include <cstring>

#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/segmentation_mask.h"

namespace dtrain::vision {

void rle_to_row_major(const RunLengthMask& mask, uint8_t* out) {
  const uint64_t height = mask.height;
  const uint64_t total = height * mask.width;
  uint64_t position = 0;
  bool one = false;
  for (uint32_t run : mask.counts) {
    const uint64_t end = std::min<uint64_t>(position + run, total);
    if (one) {
      for (uint64_t p = position; p < end; ++p) {
        out[(p % height) * mask.width + p / height] = 1;
      }
    }
    position = end;
    one = !one;
  }
}

void rasterize_segmentation(const Segmentation& segmentation, const BoundingBox& box, uint32_t height, uint32_t width,
                            uint8_t* out) {
  const RunLengthMask mask = std::holds_alternative<std::monostate>(segmentation)
                                 ? rle_from_box(box, height, width)
                                 : segmentation_mask(segmentation, height, width);
  if (mask.height != height || mask.width != width) return;  // checked when the JSON was read
  rle_to_row_major(mask, out);
}

InstanceTargets make_instance_targets(const CocoDataset& dataset, const DatasetImage& image) {
  InstanceTargets targets;
  targets.height = image.height;
  targets.width = image.width;
  const float w = static_cast<float>(image.width);
  const float h = static_cast<float>(image.height);
  std::vector<const CocoAnnotation*> kept;
  for (const CocoAnnotation& a : dataset.annotations_of(image)) {
    if (a.iscrowd) continue;
    // As torchvision: float32 corners, clamped to [0, w] x [0, h].
    const float x1 = std::clamp(static_cast<float>(a.bbox.x), 0.0f, w);
    const float y1 = std::clamp(static_cast<float>(a.bbox.y), 0.0f, h);
    const float x2 = std::clamp(static_cast<float>(a.bbox.x) + static_cast<float>(a.bbox.width), 0.0f, w);
    const float y2 = std::clamp(static_cast<float>(a.bbox.y) + static_cast<float>(a.bbox.height), 0.0f, h);
    if (!(x2 > x1 && y2 > y1)) continue;
    targets.boxes.push_back({x1, y1, x2, y2});
    targets.labels.push_back(dataset.label(a.category_id));
    kept.push_back(&a);
  }
  const size_t plane = size_t{image.height} * image.width;
  targets.masks.assign(kept.size() * plane, 0);
  for (size_t i = 0; i < kept.size(); ++i) {
    rasterize_segmentation(kept[i]->segmentation, kept[i]->bbox, image.height, image.width, targets.mask(i));
  }
  return targets;
}

}  // namespace dtrain::vision
