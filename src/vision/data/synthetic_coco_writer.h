#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vision/data/image.h"
#include "vision/coco/coco_annotation.h"

namespace dtrain::vision {

// One object of a generated image: a category, its segmentation (polygons
// or a compressed RLE), area in pixels and tight box.
struct SyntheticInstance {
  int64_t category_id = 0;
  Segmentation segmentation;
  double area = 0;
  BoundingBox bbox;
};

struct SyntheticImage {
  RgbImage image;
  std::vector<SyntheticInstance> instances;
};

// What every synthetic dataset command takes.
struct SyntheticSpec {
  std::string out_dir;
  size_t train = 0;
  size_t val = 0;
  uint32_t size = 128;    // the longest side an image can have
  uint32_t min_size = 0;  // the shortest; 0: every image is size x size
  uint64_t seed = 0;
  int threads = 0;                                   // 0: one per core; the output does not depend on it
  std::function<void(const std::string&)> progress;  // "wrote 100/500 train images"
};

// Generates one image of a split: a pure function of the split name, the
// index (0-based) and the spec's seed.
using ImageGenerator = std::function<SyntheticImage(const std::string& split, size_t index, uint32_t height,
                                                    uint32_t width, uint64_t seed)>;

// Writes the dataset: OUT/{train,val}/<12-digit id>.png and
// OUT/annotations/instances_{train,val}.json (COCO instances format, image
// ids 1..N per split, iscrowd 0). Image sizes are drawn per image in
// [min_size, size]. Images are generated and encoded on `threads` threads;
// the files are byte-identical for any thread count.
void write_synthetic_dataset(const SyntheticSpec& spec, const std::vector<CocoCategory>& categories,
                             const std::string& description, const ImageGenerator& generate);

}  // namespace dtrain::vision
