#include "vision/data/transforms.h"

#include <algorithm>
#include <cmath>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {

uint64_t SampleRng::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double SampleRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t SampleRng::below(uint64_t n) { return n == 0 ? 0 : next() % n; }

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  SampleRng rng(a * 0x9E3779B97F4A7C15ull ^ 0x5851F42D4C957F2Dull);
  uint64_t h = rng.next() ^ b;
  h = SampleRng(h).next() ^ c;
  return SampleRng(h).next();
}

float resize_scale(uint32_t height, uint32_t width, float min_size, float max_size) {
  const float shorter = static_cast<float>(std::min(height, width));
  const float longer = static_cast<float>(std::max(height, width));
  return std::min(min_size / shorter, max_size / longer);
}

std::pair<uint32_t, uint32_t> resized_size(uint32_t height, uint32_t width, float min_size, float max_size) {
  // Python multiplies the float32 scale (widened to double) by the size.
  const double scale = resize_scale(height, width, min_size, max_size);
  return {static_cast<uint32_t>(std::floor(static_cast<double>(height) * scale)),
          static_cast<uint32_t>(std::floor(static_cast<double>(width) * scale))};
}

void horizontal_flip(RgbImage& image, InstanceTargets& targets) {
  const uint32_t w = image.width;
  for (uint32_t y = 0; y < image.height; ++y) {
    uint8_t* row = image.at(y, 0);
    for (uint32_t x = 0; x < w / 2; ++x) {
      std::swap_ranges(row + size_t{x} * 3, row + size_t{x} * 3 + 3, row + size_t{w - 1 - x} * 3);
    }
  }
  const float fw = static_cast<float>(targets.width);
  for (auto& b : targets.boxes) {
    const float x1 = fw - b[2];
    const float x2 = fw - b[0];
    b[0] = x1;
    b[2] = x2;
  }
  const size_t rows = targets.size() * targets.height;
  for (size_t r = 0; r < rows; ++r) {
    uint8_t* row = targets.masks.data() + r * targets.width;
    std::reverse(row, row + targets.width);
  }
}

FloatImage normalize(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std) {
  FloatImage out;
  out.height = image.height;
  out.width = image.width;
  const size_t plane = size_t{image.height} * image.width;
  out.data.resize(plane * 3);
  // One table per channel: 256 values instead of a division per pixel.
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) table[c][v] = (static_cast<float>(v) / 255.0f - mean[c]) / std[c];
  }
  const uint8_t* p = image.pixels.data();
  float* r = out.data.data();
  float* g = r + plane;
  float* b = g + plane;
  for (size_t i = 0; i < plane; ++i) {
    r[i] = table[0][p[3 * i]];
    g[i] = table[1][p[3 * i + 1]];
    b[i] = table[2][p[3 * i + 2]];
  }
  return out;
}

namespace {

// PyTorch's bilinear source index with align_corners = false.
struct Tap {
  uint32_t i0, i1;
  float w0, w1;
};

std::vector<Tap> bilinear_taps(uint32_t in, uint32_t out) {
  std::vector<Tap> taps(out);
  // As ATen's CPU kernel (torch 2.x): the scale, the source coordinate and the
  // weights in float32, the coordinate scale * (d + 0.5) - 0.5 rounded once, as
  // the fused multiply-add ATen is compiled to gives it (the product is exact in
  // double, so rounding the double result is that one rounding). Checked against
  // at::upsample_bilinear2d in the batching tests.
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (uint32_t d = 0; d < out; ++d) {
    float src = static_cast<float>(static_cast<double>(scale) * (static_cast<double>(d) + 0.5) - 0.5);
    if (src < 0) src = 0;
    const auto i0 = static_cast<uint32_t>(src);
    const uint32_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
    const float l1 = std::clamp(src - static_cast<float>(i0), 0.0f, 1.0f);
    taps[d] = {i0, i1, 1.0f - l1, l1};
  }
  return taps;
}

}  // namespace

FloatImage resize_bilinear(const FloatImage& image, uint32_t height, uint32_t width) {
  if (height == 0 || width == 0 || image.height == 0 || image.width == 0) {
    throw CocoError("resize: empty image or target size");
  }
  FloatImage out;
  out.height = height;
  out.width = width;
  out.data.resize(size_t{3} * height * width);
  const std::vector<Tap> ty = bilinear_taps(image.height, height);
  const std::vector<Tap> tx = bilinear_taps(image.width, width);
  const size_t in_plane = size_t{image.height} * image.width;
  const size_t out_plane = size_t{height} * width;
  for (int c = 0; c < 3; ++c) {
    const float* src = image.data.data() + c * in_plane;
    float* dst = out.data.data() + c * out_plane;
    for (uint32_t y = 0; y < height; ++y) {
      const float* r0 = src + size_t{ty[y].i0} * image.width;
      const float* r1 = src + size_t{ty[y].i1} * image.width;
      const float h0 = ty[y].w0, h1 = ty[y].w1;
      float* o = dst + size_t{y} * width;
      for (uint32_t x = 0; x < width; ++x) {
        const Tap& t = tx[x];
        o[x] = h0 * (t.w0 * r0[t.i0] + t.w1 * r0[t.i1]) + h1 * (t.w0 * r1[t.i0] + t.w1 * r1[t.i1]);
      }
    }
  }
  return out;
}

void resize(FloatImage& image, InstanceTargets& targets, uint32_t height, uint32_t width) {
  const uint32_t in_h = targets.height, in_w = targets.width;
  image = resize_bilinear(image, height, width);
  if (targets.height == 0 || targets.width == 0) {
    targets.height = height;
    targets.width = width;
    return;
  }
  // Nearest neighbour as PyTorch: src = floor(dst * in / out).
  const float sy = static_cast<float>(in_h) / static_cast<float>(height);
  const float sx = static_cast<float>(in_w) / static_cast<float>(width);
  std::vector<uint32_t> src_x(width);
  for (uint32_t x = 0; x < width; ++x) {
    src_x[x] = std::min(static_cast<uint32_t>(std::floor(static_cast<float>(x) * sx)), in_w - 1);
  }
  std::vector<uint8_t> masks(targets.size() * size_t{height} * width);
  for (size_t k = 0; k < targets.size(); ++k) {
    const uint8_t* in = targets.mask(k);
    uint8_t* out = masks.data() + k * size_t{height} * width;
    for (uint32_t y = 0; y < height; ++y) {
      const uint32_t yy = std::min(static_cast<uint32_t>(std::floor(static_cast<float>(y) * sy)), in_h - 1);
      const uint8_t* row = in + size_t{yy} * in_w;
      uint8_t* o = out + size_t{y} * width;
      for (uint32_t x = 0; x < width; ++x) o[x] = row[src_x[x]];
    }
  }
  targets.masks = std::move(masks);
  // torchvision's resize_boxes: float32 ratios new / old per axis.
  const float ry = static_cast<float>(height) / static_cast<float>(in_h);
  const float rx = static_cast<float>(width) / static_cast<float>(in_w);
  for (auto& b : targets.boxes) {
    b[0] *= rx;
    b[1] *= ry;
    b[2] *= rx;
    b[3] *= ry;
  }
  targets.height = height;
  targets.width = width;
}

TransformedSample transform_sample(RgbImage image, InstanceTargets targets, const TransformOptions& options,
                                   uint64_t seed) {
  if (options.min_sizes.empty()) throw CocoError("transforms: no min size given");
  SampleRng rng(seed);
  TransformedSample out;
  // Both draws happen whatever the options so that a sample's choices do not
  // shift when only one option changes.
  const bool flip = rng.uniform() < options.flip_probability;
  const int min_size = options.min_sizes[rng.below(options.min_sizes.size())];
  if (flip) horizontal_flip(image, targets);
  out.flipped = flip;
  out.image = normalize(image, options.mean, options.std);
  out.scale =
      resize_scale(image.height, image.width, static_cast<float>(min_size), static_cast<float>(options.max_size));
  const auto [h, w] =
      resized_size(image.height, image.width, static_cast<float>(min_size), static_cast<float>(options.max_size));
  if (h != image.height || w != image.width) {
    resize(out.image, targets, h, w);
  }
  out.targets = std::move(targets);
  return out;
}

}  // namespace dtrain::vision
