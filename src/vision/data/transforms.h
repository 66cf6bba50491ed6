#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "vision/data/image.h"
#include "vision/data/instance_targets.h"

namespace dtrain::vision {

// A normalised image as the model takes it: 3 x height x width float32,
// channel-major (CHW).
struct FloatImage {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<float> data;  // 3 * height * width

  friend bool operator==(const FloatImage&, const FloatImage&) = default;
};

// torchvision's GeneralizedRCNNTransform scale: min(min_size / min(h, w),
// max_size / max(h, w)), computed in float32 as torchvision does.
float resize_scale(uint32_t height, uint32_t width, float min_size, float max_size);

// The size F.interpolate(scale_factor=scale, recompute_scale_factor=True)
// produces: floor(side * scale) per side. {height, width}.
std::pair<uint32_t, uint32_t> resized_size(uint32_t height, uint32_t width, float min_size, float max_size);

// Mirrors the image left-right together with its targets: boxes become
// (W - x2, y1, W - x1, y2) and every mask is mirrored.
void horizontal_flip(RgbImage& image, InstanceTargets& targets);

// (pixel / 255 - mean) / std per channel, into CHW float32.
FloatImage normalize(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std);

// Resizes to `height` x `width` as GeneralizedRCNNTransform does: the image
// bilinearly (align_corners = false), the masks by nearest neighbour, the
// boxes scaled by new/old size per axis.
void resize(FloatImage& image, InstanceTargets& targets, uint32_t height, uint32_t width);
FloatImage resize_bilinear(const FloatImage& image, uint32_t height, uint32_t width);

// The pipeline of one training sample. min_sizes holds one size for
// evaluation or several for multi-scale training, one drawn per image.
struct TransformOptions {
  std::vector<int> min_sizes = {800};
  int max_size = 1333;
  double flip_probability = 0.5;  // 0 for evaluation
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};
};

// A small deterministic generator (SplitMix64) so that a sample's random
// choices depend only on its seed, never on threads or the standard library.
class SampleRng {
 public:
  explicit SampleRng(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform();            // [0, 1)
  uint64_t below(uint64_t n);  // [0, n)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

 private:
  uint64_t state_;
};

// Mixes values into one seed (for "seed, epoch, image").
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0);

struct TransformedSample {
  FloatImage image;
  InstanceTargets targets;
  bool flipped = false;
  float scale = 1;
};

// Flip (drawn with flip_probability), normalize, resize to a drawn min size.
TransformedSample transform_sample(RgbImage image, InstanceTargets targets, const TransformOptions& options,
                                   uint64_t seed);

}  // namespace dtrain::vision
