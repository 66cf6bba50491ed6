#include "vision/coco/run_length_mask.h"

#include <algorithm>
#include <string>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {

RunLengthMask rle_encode(std::span<const uint8_t> column_major, uint32_t height, uint32_t width) {
  const uint64_t pixels = uint64_t{height} * width;
  if (column_major.size() != pixels) {
    throw CocoError("rle_encode: mask has " + std::to_string(column_major.size()) +
                    " bytes, expected height*width = " + std::to_string(pixels));
  }
  RunLengthMask out{height, width, {}};
  uint8_t current = 0;
  uint32_t run = 0;
  for (uint8_t pixel : column_major) {
    if (pixel != current) {
      out.counts.push_back(run);
      run = 0;
      current = pixel;
    }
    ++run;
  }
  out.counts.push_back(run);
  return out;
}

std::vector<uint8_t> rle_decode(const RunLengthMask& mask) {
  const uint64_t pixels = uint64_t{mask.height} * mask.width;
  std::vector<uint8_t> out;
  out.reserve(pixels);
  uint8_t value = 0;
  for (uint32_t run : mask.counts) {
    if (out.size() + run > pixels) {
      throw CocoError("rle_decode: the runs cover more than height*width = " + std::to_string(pixels) + " pixels");
    }
    out.insert(out.end(), run, value);
    value = !value;
  }
  out.resize(pixels, 0);
  return out;
}

uint32_t rle_area(const RunLengthMask& mask) {
  uint32_t area = 0;
  for (size_t i = 1; i < mask.counts.size(); i += 2) area += mask.counts[i];
  return area;
}

namespace {

// n / d and n % d for 32-bit n by multiplications instead of a division (which
// costs more than the rest of a run's work): Lemire, Kaser and Kurz, "Faster
// Remainder by Direct Computation" (2019). Exact for every 32-bit n and every
// d >= 2; d = 1 needs no arithmetic at all.
class ExactDivisor {
 public:
  explicit ExactDivisor(uint32_t d) : d_(d), m_(d > 1 ? UINT64_MAX / d + 1 : 0) {}
  uint32_t quotient(uint32_t n) const {
    if (d_ == 1) return n;
    return static_cast<uint32_t>((static_cast<unsigned __int128>(m_) * n) >> 64);
  }
  uint32_t remainder(uint32_t n) const {
    if (d_ == 1) return 0;
    const uint64_t low = m_ * n;
    return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d_) >> 64);
  }

 private:
  uint32_t d_;
  uint64_t m_;
};

}  // namespace

BoundingBox rle_to_bbox(const RunLengthMask& mask) {
  const uint32_t h = mask.height;
  // Only complete (zeros, ones) pairs matter; a trailing run of zeros does not.
  const size_t runs = mask.counts.size() / 2 * 2;
  if (runs == 0 || h == 0) return {};
  const ExactDivisor rows(h);
  uint32_t x_min = mask.width, y_min = h, x_max = 0, y_max = 0;
  uint32_t position = 0;     // pixels consumed so far
  uint32_t run_start_x = 0;  // column where the current run of ones starts
  for (size_t j = 0; j < runs; ++j) {
    position += mask.counts[j];
    // For a run of zeros (even j) `position` is the first foreground pixel;
    // for a run of ones it is one past the last, so step back one.
    const uint32_t pixel = position - static_cast<uint32_t>(j % 2);
    const uint32_t y = rows.remainder(pixel);
    const uint32_t x = rows.quotient(pixel);
    if (j % 2 == 0) {
      run_start_x = x;
    } else if (run_start_x < x) {
      // The run of ones crosses a column boundary: it touches both the top
      // and the bottom of the image.
      y_min = 0;
      y_max = h - 1;
    }
    x_min = std::min(x_min, x);
    x_max = std::max(x_max, x);
    y_min = std::min(y_min, y);
    y_max = std::max(y_max, y);
  }
  return BoundingBox{static_cast<double>(x_min), static_cast<double>(y_min), static_cast<double>(x_max - x_min + 1),
                     static_cast<double>(y_max - y_min + 1)};
}

}  // namespace dtrain::vision
