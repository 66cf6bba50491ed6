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

// One edge of the outline as COCO walks it: the coordinate that changes
// faster steps by one and the other is rounded, and the points are computed
// from the end with the smaller leading coordinate, so that an edge and its
// reverse give the same points. The walk visits them from the edge's first
// corner to its second.
class Edge {
 public:
  Edge(GridPoint from, GridPoint to) : xs_(from.u), ys_(from.v), xe_(to.u), ye_(to.v) {
    const int dx = std::abs(xe_ - xs_), dy = std::abs(ys_ - ye_);
    reversed_ = (dx >= dy && xs_ > xe_) || (dx < dy && ys_ > ye_);
    if (reversed_) {
      std::swap(xs_, xe_);
      std::swap(ys_, ye_);
    }
    x_major_ = dx >= dy;
    steps_ = x_major_ ? dx : dy;
    // A repeated corner divides 0 by 0 in COCO; its one point is the corner.
    if (steps_ > 0) slope_ = x_major_ ? static_cast<double>(ye_ - ys_) / dx : static_cast<double>(xe_ - xs_) / dy;
  }

  // The t-th point from the end with the smaller leading coordinate.
  GridPoint at(int t) const {
    if (steps_ == 0) return {xs_, ys_};
    return x_major_ ? GridPoint{t + xs_, static_cast<int>(ys_ + slope_ * t + .5)}
                    : GridPoint{static_cast<int>(xs_ + slope_ * t + .5), t + ys_};
  }
  GridPoint first_visited() const { return at(reversed_ ? steps_ : 0); }
  GridPoint last_visited() const { return at(reversed_ ? 0 : steps_); }

  // Calls visit(u, v) for every pair of neighbouring points on the edge that
  // lie in different fine columns and whose left column is `column` or one of
  // every fifth column after it: u is the left column, v the upper row.
  // Neighbours differ by at most one column, and the columns along t are
  // monotone, so the pairs are found without walking the points between.
  template <typename Visit>
  void for_each_column_step(int column, Visit&& visit) const {
    if (steps_ == 0) return;
    if (x_major_) {
      // Point t is in column xs + t: the pair (t - 1, t) leaves column xs + t - 1.
      for (int c = first_at_or_after(column, xs_); c <= xs_ + steps_ - 1; c += 5) {
        const int t = c - xs_ + 1;
        visit(c, std::min(at(t - 1).v, at(t).v));
      }
      return;
    }
    const int u_first = at(0).u, u_last = at(steps_).u;
    if (u_first == u_last) return;
    const bool rising = u_last > u_first;
    // Rising: the pair leaving column c ends at the first t in column c + 1.
    // Falling: it ends at the first t in column c.
    for (int c = first_at_or_after(column, std::min(u_first, u_last)); c <= std::max(u_first, u_last) - 1; c += 5) {
      const int target = rising ? c + 1 : c;
      const auto reached = [&](int t) { return rising ? at(t).u >= target : at(t).u <= target; };
      // Where the rounded column reaches the target, from the line itself;
      // then made exact on the points (at most a step or two away).
      const double boundary =
          rising ? std::ceil((target - .5 - xs_) / slope_) : std::floor((target + .5 - xs_) / slope_) + 1;
      int t = static_cast<int>(std::clamp(boundary, 1.0, static_cast<double>(steps_)));
      while (t > 1 && reached(t - 1)) --t;
      while (t < steps_ && !reached(t)) ++t;
      visit(c, ys_ + t - 1);
    }
  }

 private:
  // The first value >= lower that is `column` plus a multiple of 5.
  static int first_at_or_after(int column, int lower) {
    if (lower <= column) return column;
    return column + (lower - column + 4) / 5 * 5;
  }

  int xs_, ys_, xe_, ye_;
  bool reversed_ = false;
  bool x_major_ = true;
  int steps_ = 0;
  double slope_ = 0;
};

// Sorts the crossings' positions. An outline crosses each pixel column a few
// times, so they are placed by column first (a counting sort over the
// columns the outline spans) and then sorted within each column. A column's
// positions all lie below the next column's, so the whole is in order.
void sort_by_column(std::vector<uint32_t>& starts, const std::vector<uint32_t>& columns) {
  if (starts.size() < 2) return;
  const auto [lowest, highest] = std::minmax_element(columns.begin(), columns.end());
  const uint32_t first_column = *lowest;
  std::vector<uint32_t> offsets(*highest - first_column + 2, 0);
  for (const uint32_t column : columns) ++offsets[column - first_column + 1];
  for (size_t c = 1; c < offsets.size(); ++c) offsets[c] += offsets[c - 1];
  std::vector<uint32_t> placed(starts.size());
  std::vector<uint32_t> next(offsets.begin(), offsets.end() - 1);
  for (size_t i = 0; i < starts.size(); ++i) placed[next[columns[i] - first_column]++] = starts[i];
  for (size_t c = 0; c + 1 < offsets.size(); ++c) {
    const auto begin = placed.begin() + offsets[c], end = placed.begin() + offsets[c + 1];
    if (end - begin == 2) {
      if (begin[1] < begin[0]) std::swap(begin[0], begin[1]);
    } else if (end - begin > 2) {
      std::sort(begin, end);
    }
  }
  starts = std::move(placed);
}

}  // namespace

RunLengthMask rle_from_polygon(std::span<const double> xy, uint32_t height, uint32_t width) {
  const size_t k = xy.size() / 2;
  const uint64_t pixels = uint64_t{height} * width;
  if (k == 0) return RunLengthMask{height, width, {static_cast<uint32_t>(pixels)}};

  std::vector<GridPoint> corners(k);
  size_t columns = 1;  // bounds the crossings below
  for (size_t j = 0; j < k; ++j) {
    corners[j] = {static_cast<int>(kUpsample * xy[2 * j] + .5), static_cast<int>(kUpsample * xy[2 * j + 1] + .5)};
  }
  for (size_t j = 0; j < k; ++j) {
    columns += static_cast<size_t>(std::abs(corners[j].u - corners[(j + 1) % k].u)) / 5 + 2;
  }

  // Where the outline moves from one fine column to the next, it crosses a
  // column of pixel centres at most once; record that pixel column and the
  // first pixel row below the crossing. The fine column u the move leaves
  // (going right) or enters (going left) is on a pixel centre when
  // (u + .5) / 5 - .5 is a whole number x: exactly when u = 5x + 2 (the
  // doubles are exact there and at least 0.2 away from a whole number
  // elsewhere).
  // Compared as the COCO API does, unsigned: a width of 0 has no last column.
  const uint64_t last_column = static_cast<uint64_t>(width) - 1;
  std::vector<uint32_t> starts;         // column-major index where a run flips
  std::vector<uint32_t> start_columns;  // the pixel column of each
  starts.reserve(columns + 1);
  start_columns.reserve(columns);
  const auto record = [&](int64_t u, int v) {
    if (u < 2 || (u - 2) % 5 != 0) return;
    const int64_t x = (u - 2) / 5;
    if (static_cast<uint64_t>(x) > last_column) return;
    // The first pixel row below fine row v: COCO's ceil((v + .5) / 5 - .5)
    // clamped to [0, height]. That is ceil((v - 2) / 5), which never lies
    // within 0.2 of a whole number unless it is one, so the doubles' rounding
    // cannot change it: computed on integers.
    const int64_t below = int64_t{v} - 2;
    const int64_t y = below <= 0 ? 0 : std::min<int64_t>((below + 4) / 5, height);
    starts.push_back(static_cast<uint32_t>(static_cast<int>(x) * static_cast<int>(height) + static_cast<int>(y)));
    start_columns.push_back(static_cast<uint32_t>(x));
  };
  // Inside an edge the order of the crossings does not matter (they are
  // sorted below) and neighbours are at most one column apart. Where one edge
  // hands over to the next, the two points may be further apart after
  // rounding; that step is taken as COCO takes it.
  GridPoint previous{0, 0};
  for (size_t j = 0; j < k; ++j) {
    const Edge edge(corners[j], corners[(j + 1) % k]);
    const GridPoint first = edge.first_visited();
    if (j > 0 && first.u != previous.u) {
      record(first.u < previous.u ? first.u : int64_t{first.u} - 1, std::min(first.v, previous.v));
    }
    edge.for_each_column_step(2, record);
    previous = edge.last_visited();
  }
  sort_by_column(starts, start_columns);
  starts.push_back(static_cast<uint32_t>(pixels));

  // Turn positions into run lengths; an empty run in the middle joins its
  // neighbours (two crossings at one pixel cancel out).
  uint32_t previous_start = 0;
  for (uint32_t& s : starts) {
    const uint32_t position = s;
    s -= previous_start;
    previous_start = position;
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
