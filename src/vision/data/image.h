#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtrain::vision {

// A decoded picture: height x width RGB pixels, row-major, interleaved
// (HWC), one byte per channel. Every decoder converts to this layout.
struct RgbImage {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3

  RgbImage() = default;
  RgbImage(uint32_t h, uint32_t w) : height(h), width(w), pixels(std::size_t{h} * w * 3, 0) {}

  uint8_t* at(uint32_t y, uint32_t x) { return pixels.data() + (std::size_t{y} * width + x) * 3; }
  const uint8_t* at(uint32_t y, uint32_t x) const { return pixels.data() + (std::size_t{y} * width + x) * 3; }

  friend bool operator==(const RgbImage&, const RgbImage&) = default;
};

}  // namespace dtrain::vision
