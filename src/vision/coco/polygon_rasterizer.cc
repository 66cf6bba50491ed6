#include "vision/coco/polygon_rasterizer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace dtrain::vision {
namespace {

// The outline is traced on a grid this many times finer than the pixels.
constexpr double kUpsample = 5;

struct GridPoint {
  int u;  // column on the fine grid
  int v;  // row on the fine grid
};

// Visits every fine-grid point on the closed outline through `corners`, in
// order, edge by edge. Along each edge the coordinate that changes faster
// steps by one and the other is rounded; each edge is walked from the end
// with the smaller leading coordinate, so that an edge and its reverse give
// the same points.
template <typename Visit>
void trace_outline(const std::vector<GridPoint>& corners, Visit&& visit) {
  const size_t k = corners.size();
  for (size_t j = 0; j < k; ++j) {
    int xs = corners[j].u, ys = corners[j].v;
    int xe = corners[(j + 1) % k].u, ye = corners[(j + 1) % k].v;
    const int dx = std::abs(xe - xs), dy = std::abs(ys - ye);
    const bool flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
      std::swap(xs, xe);
      std::swap(ys, ye);
    }
    if (dx == 0 && dy == 0) {
      // A repeated corner. Its row is never read: both neighbours share its
      // column (COCO divides 0 by 0 here; the result is unused).
      visit(GridPoint{xs, ys});
      continue;
    }
    if (dx >= dy) {
      const double slope = static_cast<double>(ye - ys) / dx;
      for (int d = 0; d <= dx; ++d) {
        const int t = flip ? dx - d : d;
        visit(GridPoint{t + xs, static_cast<int>(ys + slope * t + .5)});
      }
    } else {
      const double slope = static_cast<double>(xe - xs) / dy;
      for (int d = 0; d <= dy; ++d) {
        const int t = flip ? dy - d : d;
        visit(GridPoint{static_cast<int>(xs + slope * t + .5), t + ys});
      }
    }
  }
}

}  // namespace

RunLengthMask rle_from_polygon(std::span<const double> xy, uint32_t height, uint32_t width) {
  const size_t k = xy.size() / 2;
  const uint64_t pixels = uint64_t{height} * width;
  if (k == 0) return RunLengthMask{height, width, {static_cast<uint32_t>(pixels)}};

  std::vector<GridPoint> corners(k);
  size_t columns = 1;  // bounds the crossings below
  for (size_t j = 0; j < k; ++j) {
    corners[j] = {static_cast<int>(kUpsample * xy[2 * j] + .5),
                  static_cast<int>(kUpsample * xy[2 * j + 1] + .5)};
  }
  for (size_t j = 0; j < k; ++j) {
    columns += static_cast<size_t>(std::abs(corners[j].u - corners[(j + 1) % k].u)) / 5 + 1;
  }

  // Where the outline moves from one fine column to the next, it crosses a
  // column of pixel centres at most once; record that pixel column and the
  // first pixel row below the crossing. The fine column u' the move leaves
  // or enters is on a pixel centre when (u' + .5) / 5 - .5 is a whole number
  // x: exactly when u' = 5x + 2 (the doubles are exact there and at least
  // 0.2 away from a whole number elsewhere).
  // Compared as the COCO API does, unsigned: a width of 0 has no last column.
  const uint64_t last_column = static_cast<uint64_t>(width) - 1;
  const double image_height = static_cast<double>(height);
  std::vector<uint32_t> starts;  // column-major index where a run flips
  starts.reserve(columns + 1);
  bool first = true;
  GridPoint prev{0, 0};
  trace_outline(corners, [&](const GridPoint cur) {
    const bool skip = first || cur.u == prev.u;
    first = false;
    const GridPoint before = prev;
    prev = cur;
    if (skip) return;
    const int64_t u = cur.u < before.u ? cur.u : int64_t{cur.u} - 1;
    if (u < 2 || (u - 2) % 5 != 0) return;
    const int64_t x = (u - 2) / 5;
    if (static_cast<uint64_t>(x) > last_column) return;
    double yd = static_cast<double>(cur.v < before.v ? cur.v : before.v);
    yd = (yd + .5) / kUpsample - .5;
    if (yd < 0) {
      yd = 0;
    } else if (yd > image_height) {
      yd = image_height;
    }
    yd = std::ceil(yd);
    starts.push_back(static_cast<uint32_t>(static_cast<int>(x) * static_cast<int>(height) +
                                           static_cast<int>(yd)));
  });
  starts.push_back(static_cast<uint32_t>(pixels));
  std::sort(starts.begin(), starts.end());

  // Turn positions into run lengths; an empty run in the middle joins its
  // neighbours (two crossings at one pixel cancel out).
  uint32_t previous = 0;
  for (uint32_t& s : starts) {
    const uint32_t position = s;
    s -= previous;
    previous = position;
  }
  RunLengthMask out{height, width, {}};
  out.counts.reserve(starts.size());
  size_t j = 0;
  out.counts.push_back(starts[j++]);
  while (j < starts.size()) {
    if (starts[j] > 0) {
      out.counts.push_back(starts[j++]);
    } else {
      ++j;
      if (j < starts.size()) out.counts.back() += starts[j++];
    }
  }
  return out;
}

RunLengthMask rle_from_box(const BoundingBox& box, uint32_t height, uint32_t width) {
  const double xs = box.x, xe = xs + box.width;
  const double ys = box.y, ye = ys + box.height;
  const std::array<double, 8> corners = {xs, ys, xs, ye, xe, ye, xe, ys};
  return rle_from_polygon(corners, height, width);
}

}  // namespace dtrain::vision
