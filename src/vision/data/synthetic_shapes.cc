#include "vision/data/synthetic_shapes.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "vision/data/instance_targets.h"
#include "vision/data/mask_contour.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_merge.h"
#include "vision/coco/rle_string.h"

namespace dtrain::vision {
namespace {

enum Shape { kSquare = 0, kCircle = 1, kTriangle = 2 };

struct PlacedShape {
  Shape shape;
  double cx, cy, radius, angle;
  std::array<uint8_t, 3> colour;
};

bool covers(const PlacedShape& s, double px, double py) {
  const double dx = px - s.cx, dy = py - s.cy;
  switch (s.shape) {
    case kCircle: return dx * dx + dy * dy <= s.radius * s.radius;
    case kSquare: {
      const double c = std::cos(s.angle), n = std::sin(s.angle);
      const double u = c * dx + n * dy, v = -n * dx + c * dy;
      return std::fabs(u) <= s.radius && std::fabs(v) <= s.radius;
    }
    case kTriangle: {
      // Equilateral, circumradius `radius`, rotated by `angle`.
      double vx[3], vy[3];
      for (int k = 0; k < 3; ++k) {
        const double a = s.angle + k * 2 * std::numbers::pi / 3;
        vx[k] = s.radius * std::cos(a);
        vy[k] = s.radius * std::sin(a);
      }
      bool negative = false, positive = false;
      for (int k = 0; k < 3; ++k) {
        const int j = (k + 1) % 3;
        const double cross = (vx[j] - vx[k]) * (dy - vy[k]) - (vy[j] - vy[k]) * (dx - vx[k]);
        negative |= cross < 0;
        positive |= cross > 0;
      }
      return !(negative && positive);
    }
  }
  return false;
}

// Each pixel's topmost shape (-1: background), testing pixel centres.
std::vector<int> owners(const std::vector<PlacedShape>& shapes, uint32_t height, uint32_t width) {
  std::vector<int> owner(size_t{height} * width, -1);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const PlacedShape& s = shapes[i];
    const double reach = s.radius * 1.5 + 1;
    const auto y0 = static_cast<uint32_t>(std::clamp(std::floor(s.cy - reach), 0.0, double(height)));
    const auto y1 = static_cast<uint32_t>(std::clamp(std::ceil(s.cy + reach), 0.0, double(height)));
    const auto x0 = static_cast<uint32_t>(std::clamp(std::floor(s.cx - reach), 0.0, double(width)));
    const auto x1 = static_cast<uint32_t>(std::clamp(std::ceil(s.cx + reach), 0.0, double(width)));
    for (uint32_t y = y0; y < y1; ++y) {
      for (uint32_t x = x0; x < x1; ++x) {
        if (covers(s, x + 0.5, y + 0.5)) owner[size_t{y} * width + x] = static_cast<int>(i);
      }
    }
  }
  return owner;
}

}  // namespace

std::vector<CocoCategory> shape_categories() { return {{1, "square"}, {2, "circle"}, {3, "triangle"}}; }

std::array<int, 3> paint_background(RgbImage& image, SampleRng& rng) {
  const int kind = static_cast<int>(rng.below(3));
  std::array<int, 3> a, b;
  for (int c = 0; c < 3; ++c) a[c] = static_cast<int>(rng.below(256));
  for (int c = 0; c < 3; ++c) b[c] = static_cast<int>(rng.below(256));
  const double angle = rng.uniform(0, 2 * std::numbers::pi);
  const int amplitude = 10 + static_cast<int>(rng.below(40));
  const double ux = std::cos(angle), uy = std::sin(angle);
  // Project the corners to normalise the gradient's parameter to [0, 1].
  const double w = image.width, h = image.height;
  const double lo = std::min({0.0, ux * w, uy * h, ux * w + uy * h});
  const double hi = std::max({0.0, ux * w, uy * h, ux * w + uy * h});
  std::array<int, 3> mean = a;
  if (kind == 1) {
    for (int c = 0; c < 3; ++c) mean[c] = (a[c] + b[c]) / 2;
  }
  for (uint32_t y = 0; y < image.height; ++y) {
    for (uint32_t x = 0; x < image.width; ++x) {
      uint8_t* p = image.at(y, x);
      if (kind == 0) {
        for (int c = 0; c < 3; ++c) p[c] = static_cast<uint8_t>(a[c]);
      } else if (kind == 1) {
        const double t = ((x + 0.5) * ux + (y + 0.5) * uy - lo) / std::max(hi - lo, 1e-9);
        for (int c = 0; c < 3; ++c) p[c] = static_cast<uint8_t>(std::lround(a[c] + (b[c] - a[c]) * t));
      } else {
        for (int c = 0; c < 3; ++c) {
          const int v = a[c] + static_cast<int>(rng.below(2 * amplitude + 1)) - amplitude;
          p[c] = static_cast<uint8_t>(std::clamp(v, 0, 255));
        }
      }
    }
  }
  return mean;
}

std::array<uint8_t, 3> contrasting_colour(SampleRng& rng, const std::array<int, 3>& avoid, int distance) {
  std::array<uint8_t, 3> colour{};
  for (int attempt = 0; attempt < 64; ++attempt) {
    for (int c = 0; c < 3; ++c) colour[c] = static_cast<uint8_t>(rng.below(256));
    int d = 0;
    for (int c = 0; c < 3; ++c) d += std::abs(colour[c] - avoid[c]);
    if (d >= distance) return colour;
  }
  for (int c = 0; c < 3; ++c) colour[c] = static_cast<uint8_t>(avoid[c] < 128 ? 255 : 0);
  return colour;
}

std::optional<SyntheticInstance> instance_from_mask(std::span<const uint8_t> mask, uint32_t height, uint32_t width,
                                                    int64_t category_id, bool polygons) {
  // Column-major copy for the RLE functions.
  std::vector<uint8_t> column_major(mask.size());
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) {
      column_major[size_t{x} * height + y] = mask[size_t{y} * width + x] != 0;
    }
  }
  const RunLengthMask rle = rle_encode(column_major, height, width);
  SyntheticInstance instance;
  instance.category_id = category_id;
  if (polygons) {
    Polygons traced = trace_outer_contours(mask, height, width);
    std::vector<RunLengthMask> parts;
    parts.reserve(traced.size());
    for (const auto& polygon : traced) parts.push_back(rle_from_polygon(polygon, height, width));
    if (parts.empty() || rle_merge(parts) != rle) return std::nullopt;
    instance.segmentation = std::move(traced);
  } else {
    instance.segmentation = CompressedRle{height, width, rle_counts_to_string(rle)};
  }
  instance.area = rle_area(rle);
  instance.bbox = rle_to_bbox(rle);
  if (instance.area == 0) return std::nullopt;
  return instance;
}

SyntheticImage generate_shapes_image(uint32_t height, uint32_t width, uint64_t seed) {
  SampleRng rng(seed);
  SyntheticImage out;
  out.image = RgbImage(height, width);
  const std::array<int, 3> background = paint_background(out.image, rng);

  const double side = std::min(height, width);
  const int count = 1 + static_cast<int>(rng.below(4));
  std::vector<PlacedShape> shapes;
  for (int i = 0; i < count; ++i) {
    PlacedShape s;
    s.shape = static_cast<Shape>(rng.below(3));
    s.radius = rng.uniform(0.08, 0.25) * side;
    // Keep the centre inside, the shape mostly so.
    s.cx = rng.uniform(s.radius * 0.5, width - s.radius * 0.5);
    s.cy = rng.uniform(s.radius * 0.5, height - s.radius * 0.5);
    s.angle = rng.uniform(0, std::numbers::pi);
    s.colour = contrasting_colour(rng, background, 160);
    shapes.push_back(s);
  }

  // Drop shapes that end up barely visible or with a hole until none does;
  // then every remaining instance's polygons reproduce its visible pixels.
  std::vector<int> owner;
  std::vector<SyntheticInstance> instances;
  for (;;) {
    owner = owners(shapes, height, width);
    std::vector<size_t> full_area(shapes.size(), 0);
    for (size_t i = 0; i < shapes.size(); ++i) {
      const std::vector<int> alone = owners({shapes[i]}, height, width);
      full_area[i] = alone.size() - static_cast<size_t>(std::count(alone.begin(), alone.end(), -1));
    }
    instances.clear();
    std::optional<size_t> drop;
    std::vector<uint8_t> mask(size_t{height} * width);
    for (size_t i = 0; i < shapes.size() && !drop; ++i) {
      size_t visible = 0;
      for (size_t p = 0; p < mask.size(); ++p) {
        mask[p] = owner[p] == static_cast<int>(i);
        visible += mask[p];
      }
      if (visible < 32 || visible * 4 < full_area[i]) {
        drop = i;
        break;
      }
      auto instance = instance_from_mask(mask, height, width, shapes[i].shape + 1, true);
      if (!instance) {
        drop = i;
        break;
      }
      instances.push_back(std::move(*instance));
    }
    if (!drop) break;
    shapes.erase(shapes.begin() + static_cast<long>(*drop));
  }

  for (size_t p = 0; p < owner.size(); ++p) {
    if (owner[p] < 0) continue;
    const auto& colour = shapes[static_cast<size_t>(owner[p])].colour;
    std::copy(colour.begin(), colour.end(), out.image.pixels.begin() + static_cast<long>(p * 3));
  }
  out.instances = std::move(instances);
  return out;
}

void make_shapes_dataset(const SyntheticSpec& spec) {
  write_synthetic_dataset(spec, shape_categories(), "shapes",
                          [](const std::string&, size_t, uint32_t height, uint32_t width, uint64_t seed) {
                            return generate_shapes_image(height, width, seed);
                          });
}

}  // namespace dtrain::vision
