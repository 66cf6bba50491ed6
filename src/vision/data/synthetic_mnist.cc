#include "vision/data/synthetic_mnist.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "vision/data/synthetic_shapes.h"
#include "vision/data/transforms.h"
#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

constexpr int kStrokeThreshold = 127;

struct PlacedDigit {
  int label;
  uint32_t x, y, side;
  std::vector<uint8_t> intensity;  // side x side
  std::array<uint8_t, 3> colour;
};

// Bilinear resampling of a 28x28 digit to side x side (pixel centres aligned).
std::vector<uint8_t> scale_digit(const uint8_t* digit, size_t rows, size_t cols, uint32_t side) {
  std::vector<uint8_t> out(size_t{side} * side);
  const double sy = double(rows) / side, sx = double(cols) / side;
  for (uint32_t y = 0; y < side; ++y) {
    const double fy = std::clamp((y + 0.5) * sy - 0.5, 0.0, double(rows - 1));
    const auto y0 = static_cast<size_t>(fy);
    const size_t y1 = std::min(y0 + 1, rows - 1);
    const double ly = fy - y0;
    for (uint32_t x = 0; x < side; ++x) {
      const double fx = std::clamp((x + 0.5) * sx - 0.5, 0.0, double(cols - 1));
      const auto x0 = static_cast<size_t>(fx);
      const size_t x1 = std::min(x0 + 1, cols - 1);
      const double lx = fx - x0;
      const double v = (1 - ly) * ((1 - lx) * digit[y0 * cols + x0] + lx * digit[y0 * cols + x1]) +
                       ly * ((1 - lx) * digit[y1 * cols + x0] + lx * digit[y1 * cols + x1]);
      out[size_t{y} * side + x] = static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 255.0)));
    }
  }
  return out;
}

}  // namespace

std::vector<CocoCategory> digit_categories() {
  std::vector<CocoCategory> categories;
  for (int d = 0; d < 10; ++d) categories.push_back({d + 1, std::to_string(d)});
  return categories;
}

SyntheticImage generate_mnist_image(const mnist::MnistImages& digits, const std::vector<uint8_t>& labels,
                                    uint32_t height, uint32_t width, uint64_t seed) {
  if (digits.count == 0) throw CocoError("MNIST split has no images");
  SampleRng rng(seed);
  SyntheticImage out;
  out.image = RgbImage(height, width);
  const std::array<int, 3> background = paint_background(out.image, rng);
  const int count = 1 + static_cast<int>(rng.below(4));
  const uint32_t shorter = std::min(height, width);
  std::vector<PlacedDigit> placed;
  for (int i = 0; i < count; ++i) {
    const size_t index = rng.below(digits.count);
    const double factor = rng.uniform(1.5, 3.0);
    const auto side = std::min<uint32_t>(static_cast<uint32_t>(std::lround(digits.rows * factor)), shorter);
    PlacedDigit d;
    d.label = labels[index];
    d.side = side;
    d.x = static_cast<uint32_t>(rng.below(width - side + 1));
    d.y = static_cast<uint32_t>(rng.below(height - side + 1));
    d.intensity = scale_digit(digits.pixels.data() + index * digits.rows * digits.cols, digits.rows, digits.cols, side);
    d.colour = contrasting_colour(rng, background, 200);
    placed.push_back(std::move(d));
  }

  const size_t pixels = size_t{height} * width;
  std::vector<int> owner;
  std::vector<size_t> strokes;
  for (;;) {
    owner.assign(pixels, -1);
    strokes.assign(placed.size(), 0);
    for (size_t i = 0; i < placed.size(); ++i) {
      const PlacedDigit& d = placed[i];
      for (uint32_t y = 0; y < d.side; ++y) {
        for (uint32_t x = 0; x < d.side; ++x) {
          if (d.intensity[size_t{y} * d.side + x] > kStrokeThreshold) {
            owner[size_t{d.y + y} * width + d.x + x] = static_cast<int>(i);
            ++strokes[i];
          }
        }
      }
    }
    std::vector<size_t> visible(placed.size(), 0);
    for (int o : owner) {
      if (o >= 0) ++visible[static_cast<size_t>(o)];
    }
    std::optional<size_t> drop;
    for (size_t i = 0; i < placed.size(); ++i) {
      if (visible[i] < 20 || visible[i] * 4 < strokes[i]) {
        drop = i;
        break;
      }
    }
    if (!drop) break;
    placed.erase(placed.begin() + static_cast<long>(*drop));
  }

  // Draw: blend each digit's intensity over what is below, in order.
  for (const PlacedDigit& d : placed) {
    for (uint32_t y = 0; y < d.side; ++y) {
      for (uint32_t x = 0; x < d.side; ++x) {
        const int a = d.intensity[size_t{y} * d.side + x];
        if (a == 0) continue;
        uint8_t* p = out.image.at(d.y + y, d.x + x);
        for (int c = 0; c < 3; ++c) p[c] = static_cast<uint8_t>((p[c] * (255 - a) + d.colour[c] * a + 127) / 255);
      }
    }
  }
  std::vector<uint8_t> mask(pixels);
  for (size_t i = 0; i < placed.size(); ++i) {
    for (size_t p = 0; p < pixels; ++p) mask[p] = owner[p] == static_cast<int>(i);
    auto instance = instance_from_mask(mask, height, width, placed[i].label + 1, false);
    if (instance) out.instances.push_back(std::move(*instance));
  }
  return out;
}

void make_mnist_instances_dataset(const SyntheticSpec& spec, const std::string& mnist_dir) {
  mnist::MnistSplit train, test;
  try {
    if (spec.train > 0) train = mnist::read_mnist_split(mnist_dir, "train");
    if (spec.val > 0) test = mnist::read_mnist_split(mnist_dir, "t10k");
  } catch (const mnist::DatasetError& e) {
    throw CocoError(e.what());
  }
  if (spec.size < 42) {
    throw CocoError(fmt::format("image size {} is too small for scaled digits (at least 42)", spec.size));
  }
  write_synthetic_dataset(spec, digit_categories(), "mnist-instances",
                          [&](const std::string& split, size_t, uint32_t height, uint32_t width, uint64_t seed) {
                            const mnist::MnistSplit& source = split == "train" ? train : test;
                            return generate_mnist_image(source.images, source.labels, height, width, seed);
                          });
}

}  // namespace dtrain::vision
