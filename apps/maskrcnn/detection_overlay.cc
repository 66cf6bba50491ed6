#include "apps/maskrcnn/detection_overlay.h"

#include <algorithm>
#include <cmath>

namespace dtrain::maskrcnn {
namespace {

// Fully saturated-ish HSV to RGB; hue in [0, 1).
std::array<uint8_t, 3> hsv_to_rgb(double hue, double saturation, double value) {
  const double h = hue * 6.0;
  const int sector = static_cast<int>(h) % 6;
  const double f = h - std::floor(h);
  const double p = value * (1 - saturation), q = value * (1 - saturation * f), t = value * (1 - saturation * (1 - f));
  double r = 0, g = 0, b = 0;
  switch (sector) {
    case 0: r = value, g = t, b = p; break;
    case 1: r = q, g = value, b = p; break;
    case 2: r = p, g = value, b = t; break;
    case 3: r = p, g = q, b = value; break;
    case 4: r = t, g = p, b = value; break;
    default: r = value, g = p, b = q; break;
  }
  auto byte = [](double v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  return {byte(r), byte(g), byte(b)};
}

void blend(uint8_t* pixel, const std::array<uint8_t, 3>& colour) {
  for (int c = 0; c < 3; ++c) pixel[c] = static_cast<uint8_t>((pixel[c] + colour[c] + 1) / 2);
}

void paint(uint8_t* pixel, const std::array<uint8_t, 3>& colour) { std::copy(colour.begin(), colour.end(), pixel); }

// The box's outline, `thickness` pixels wide inside the box, clipped to the image.
void outline_box(vision::RgbImage& image, const std::array<float, 4>& box, const std::array<uint8_t, 3>& colour,
                 int64_t thickness) {
  const int64_t w = image.width, h = image.height;
  const int64_t x1 = std::clamp<int64_t>(std::lround(std::floor(box[0])), 0, w - 1);
  const int64_t y1 = std::clamp<int64_t>(std::lround(std::floor(box[1])), 0, h - 1);
  const int64_t x2 = std::clamp<int64_t>(std::lround(std::ceil(box[2])) - 1, x1, w - 1);
  const int64_t y2 = std::clamp<int64_t>(std::lround(std::ceil(box[3])) - 1, y1, h - 1);
  for (int64_t y = y1; y <= y2; ++y) {
    for (int64_t x = x1; x <= x2; ++x) {
      const bool edge = x - x1 < thickness || x2 - x < thickness || y - y1 < thickness || y2 - y < thickness;
      if (edge) paint(image.at(static_cast<uint32_t>(y), static_cast<uint32_t>(x)), colour);
    }
  }
}

}  // namespace

std::array<uint8_t, 3> category_colour(int64_t category_id) {
  // Steps of the golden ratio spread any run of ids evenly around the hue circle.
  const double golden = 0.6180339887498949;
  const double hue = std::fmod(static_cast<double>(category_id) * golden + 0.1, 1.0);
  return hsv_to_rgb(hue < 0 ? hue + 1.0 : hue, 0.85, 0.95);
}

vision::RgbImage draw_detections(const vision::RgbImage& image, const vision::inference::ImageDetections& detections) {
  vision::RgbImage out = image;
  if (out.width == 0 || out.height == 0) return out;
  // Readable on thumbnails and on photos alike: one pixel per ~300 of the shorter side.
  const int64_t thickness = std::max<int64_t>(1, std::min(out.width, out.height) / 300);
  for (auto it = detections.instances.rbegin(); it != detections.instances.rend(); ++it) {
    const std::array<uint8_t, 3> colour = category_colour(it->label);
    if (it->mask.size() == out.pixels.size() / 3) {
      for (size_t i = 0; i < it->mask.size(); ++i) {
        if (it->mask[i]) blend(out.pixels.data() + i * 3, colour);
      }
    }
    outline_box(out, it->box, colour, thickness);
  }
  return out;
}

}  // namespace dtrain::maskrcnn
