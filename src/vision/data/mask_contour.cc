#include "vision/data/mask_contour.h"

namespace dtrain::vision {
namespace {

// Where a contour vertex (a pixel corner, integer grid) lands in COCO's
// polygon coordinates. COCO's rasteriser puts pixel x's centre at x (see
// rle_from_polygon), so a pixel spans [x - 0.5, x + 0.5] there.
constexpr double kCornerOffset = -0.5;

}  // namespace

std::vector<uint32_t> label_regions(std::span<const uint8_t> mask, uint32_t height, uint32_t width, uint32_t* count) {
  std::vector<uint32_t> labels(mask.size(), 0);
  std::vector<uint32_t> stack;
  uint32_t n = 0;
  for (size_t start = 0; start < mask.size(); ++start) {
    if (mask[start] == 0 || labels[start] != 0) continue;
    labels[start] = ++n;
    stack.push_back(static_cast<uint32_t>(start));
    while (!stack.empty()) {
      const uint32_t p = stack.back();
      stack.pop_back();
      const uint32_t y = p / width, x = p % width;
      const auto visit = [&](uint32_t q) {
        if (mask[q] != 0 && labels[q] == 0) {
          labels[q] = n;
          stack.push_back(q);
        }
      };
      if (x > 0) visit(p - 1);
      if (x + 1 < width) visit(p + 1);
      if (y > 0) visit(p - width);
      if (y + 1 < height) visit(p + width);
    }
  }
  if (count != nullptr) *count = n;
  return labels;
}

Polygons trace_outer_contours(std::span<const uint8_t> mask, uint32_t height, uint32_t width) {
  uint32_t regions = 0;
  const std::vector<uint32_t> labels = label_regions(mask, height, width, &regions);
  Polygons polygons;
  std::vector<bool> traced(regions + 1, false);
  for (size_t start = 0; start < labels.size(); ++start) {
    const uint32_t region = labels[start];
    if (region == 0 || traced[region]) continue;
    traced[region] = true;
    // Pixel (x, y) of this region, not of another one.
    const auto inside = [&](int64_t x, int64_t y) {
      return x >= 0 && y >= 0 && x < width && y < height &&
             labels[static_cast<size_t>(y) * width + static_cast<size_t>(x)] == region;
    };
    // Walk the pixel edges with the region on the right, starting along the
    // top edge of its first pixel (whose top neighbour is outside, so this
    // is the outer boundary). Directions: 0 right, 1 down, 2 left, 3 up. At
    // each corner: turn right when the front-right pixel is outside (this
    // keeps diagonal neighbours apart), left when the front-left one is
    // inside, else go straight.
    static constexpr int kStepX[4] = {1, 0, -1, 0};
    static constexpr int kStepY[4] = {0, 1, 0, -1};
    static constexpr int kFrontRightX[4] = {0, -1, -1, 0};
    static constexpr int kFrontRightY[4] = {0, 0, -1, -1};
    static constexpr int kFrontLeftX[4] = {0, 0, -1, -1};
    static constexpr int kFrontLeftY[4] = {-1, 0, 0, -1};
    const int64_t x0 = static_cast<int64_t>(start % width), y0 = static_cast<int64_t>(start / width);
    int64_t vx = x0, vy = y0;
    int d = 0;
    std::vector<double>& polygon = polygons.emplace_back();
    polygon.push_back(static_cast<double>(vx) + kCornerOffset);
    polygon.push_back(static_cast<double>(vy) + kCornerOffset);
    do {
      vx += kStepX[d];
      vy += kStepY[d];
      int turn = d;
      if (!inside(vx + kFrontRightX[d], vy + kFrontRightY[d])) {
        turn = (d + 1) % 4;
      } else if (inside(vx + kFrontLeftX[d], vy + kFrontLeftY[d])) {
        turn = (d + 3) % 4;
      }
      if (turn != d && !(vx == x0 && vy == y0)) {
        polygon.push_back(static_cast<double>(vx) + kCornerOffset);
        polygon.push_back(static_cast<double>(vy) + kCornerOffset);
      }
      d = turn;
    } while (!(vx == x0 && vy == y0 && d == 0));
  }
  return polygons;
}

}  // namespace dtrain::vision
