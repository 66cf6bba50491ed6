// The rasterizer finds an outline's pixel-column crossings edge by edge
// without visiting the fine-grid points between them. This checks it against
// the plain walk it replaced (every fine-grid point of the outline, in order,
// as COCO's frPoly visits them), on polygons of every kind: real-sized and
// tiny, inside, across and outside the image, steep and flat edges, repeated
// corners, integer and fractional coordinates, and the golden set's polygons.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "vision/coco/polygon_rasterizer.h"

namespace dtrain::vision {
namespace {

// The plain walk: every fine-grid point of the outline, consecutive points
// compared. Slow and obviously COCO's; the reference for the fast version.
RunLengthMask rle_from_polygon_by_walking(std::span<const double> xy, uint32_t height, uint32_t width) {
  const size_t k = xy.size() / 2;
  const uint64_t pixels = uint64_t{height} * width;
  if (k == 0) return RunLengthMask{height, width, {static_cast<uint32_t>(pixels)}};
  std::vector<int> us(k), vs(k);
  for (size_t j = 0; j < k; ++j) {
    us[j] = static_cast<int>(5 * xy[2 * j] + .5);
    vs[j] = static_cast<int>(5 * xy[2 * j + 1] + .5);
  }
  std::vector<std::pair<int, int>> points;
  for (size_t j = 0; j < k; ++j) {
    int xs = us[j], ys = vs[j], xe = us[(j + 1) % k], ye = vs[(j + 1) % k];
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    if (dx == 0 && dy == 0) {
      points.emplace_back(xs, ys);
      continue;
    }
    const int n = std::max(dx, dy);
    const double slope = dx >= dy ? double(ye - ys) / dx : double(xe - xs) / dy;
    for (int d = 0; d <= n; ++d) {
      const int t = flip ? n - d : d;
      points.emplace_back(dx >= dy ? std::pair{t + xs, int(ys + slope * t + .5)}
                                   : std::pair{int(xs + slope * t + .5), t + ys});
    }
  }
  std::vector<uint32_t> starts;
  for (size_t p = 1; p < points.size(); ++p) {
    const auto [u1, v1] = points[p];
    const auto [u0, v0] = points[p - 1];
    if (u1 == u0) continue;
    const int64_t u = u1 < u0 ? u1 : int64_t{u1} - 1;
    if (u < 2 || (u - 2) % 5 != 0) continue;
    const int64_t x = (u - 2) / 5;
    if (static_cast<uint64_t>(x) > uint64_t{width} - 1) continue;
    const double y = std::ceil(std::clamp((std::min(v0, v1) + .5) / 5 - .5, 0.0, double(height)));
    starts.push_back(static_cast<uint32_t>(x * height + static_cast<int64_t>(y)));
  }
  starts.push_back(static_cast<uint32_t>(pixels));
  std::sort(starts.begin(), starts.end());
  // Run lengths; an empty run in the middle joins its neighbours.
  std::vector<uint32_t> runs;
  uint32_t previous = 0;
  for (uint32_t s : starts) {
    runs.push_back(s - previous);
    previous = s;
  }
  RunLengthMask out{height, width, {runs[0]}};
  for (size_t j = 1; j < runs.size(); ++j) {
    if (runs[j] > 0) {
      out.counts.push_back(runs[j]);
    } else if (++j < runs.size()) {
      out.counts.back() += runs[j];
    }
  }
  return out;
}

std::vector<double> random_polygon(std::mt19937_64& rng, double lo, double hi, int corners, bool integer) {
  std::uniform_real_distribution<double> coord(lo, hi);
  std::vector<double> xy;
  for (int i = 0; i < corners; ++i) {
    for (int axis = 0; axis < 2; ++axis) {
      const double c = coord(rng);
      xy.push_back(integer ? std::round(c) : c);
    }
  }
  return xy;
}

TEST(PolygonWalk, RandomPolygonsMatchTheFullWalk) {
  std::mt19937_64 rng(2014);
  for (int trial = 0; trial < 4000; ++trial) {
    const bool real_sized = trial % 2 == 0;
    const uint32_t height = real_sized ? 480 : 1 + trial % 37, width = real_sized ? 640 : 1 + trial % 41;
    const double span = real_sized ? 700 : 50;
    const std::vector<double> xy = random_polygon(rng, -0.2 * span, 1.1 * span, 1 + trial % 40, trial % 3 == 0);
    ASSERT_EQ(rle_from_polygon(xy, height, width), rle_from_polygon_by_walking(xy, height, width)) << "trial " << trial;
  }
}

TEST(PolygonWalk, SteepFlatAndRepeatedEdgesMatchTheFullWalk) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> coord(0, 640), tiny(-0.3, 0.3);
  for (int trial = 0; trial < 2000; ++trial) {
    // Near-vertical and near-horizontal edges (slopes close to 0 and 1),
    // diagonals, and corners given twice.
    std::vector<double> xy;
    double x = coord(rng), y = coord(rng);
    for (int i = 0; i < 12; ++i) {
      xy.push_back(x);
      xy.push_back(y);
      switch ((trial + i) % 4) {
        case 0: x += tiny(rng), y = coord(rng); break;
        case 1: y += tiny(rng), x = coord(rng); break;
        case 2: {
          const double d = coord(rng) - 320;
          x += d;
          y += d + tiny(rng);
          break;
        }
        default: break;  // the same corner again
      }
    }
    ASSERT_EQ(rle_from_polygon(xy, 480, 640), rle_from_polygon_by_walking(xy, 480, 640)) << "trial " << trial;
  }
}

TEST(PolygonWalk, ManyCrossingsOfOnePixelColumnMatchTheFullWalk) {
  // A zigzag up and down across the centre of column 10: hundreds of crossings in one
  // column, which the rasterizer sorts within the column.
  std::vector<double> xy;
  for (int i = 0; i < 600; ++i) {
    xy.push_back(i % 2 ? 10.9 : 10.1);
    xy.push_back(1 + (i * 37 % 461) * 0.1);
  }
  ASSERT_EQ(rle_from_polygon(xy, 48, 20), rle_from_polygon_by_walking(xy, 48, 20));
}

TEST(PolygonWalk, GoldenSetPolygonsMatchTheFullWalk) {
  // Every polygon of the 100 val2014 images, as numbers pulled from the JSON
  // text: "segmentation":[[...],[...]] lists, with each image's size.
  std::ifstream in(std::string(COCO_FAKE100_DIR) + "/instances_val2014_100.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  size_t checked = 0;
  for (size_t at = json.find("\"segmentation\": [["); at != std::string::npos;
       at = json.find("\"segmentation\": [[", at + 1)) {
    size_t pos = at + 17;
    while (json[pos] == '[') {
      const size_t end = json.find(']', pos);
      std::vector<double> xy;
      std::istringstream numbers(json.substr(pos + 1, end - pos - 1));
      for (std::string item; std::getline(numbers, item, ',');) xy.push_back(std::stod(item));
      ASSERT_EQ(rle_from_polygon(xy, 480, 640), rle_from_polygon_by_walking(xy, 480, 640)) << "at " << at;
      ++checked;
      pos = end + 1;
      while (json[pos] == ',' || json[pos] == ' ') ++pos;
    }
  }
  EXPECT_GT(checked, 900u);  // 939 polygons in the file
}

}  // namespace
}  // namespace dtrain::vision
