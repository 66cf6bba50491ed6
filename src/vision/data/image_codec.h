#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "vision/data/image.h"

namespace dtrain::vision {

// Decodes a JPEG (libjpeg-turbo's TurboJPEG) or PNG (libpng) held in memory,
// chosen by the file's signature, into RGB: grayscale is replicated into the
// three channels, alpha is dropped, 16-bit PNG samples are reduced to 8 bits
// and palettes expanded. `source` names the data in errors. Throws CocoError
// ("SOURCE: not a JPEG or PNG image", "SOURCE: corrupt JPEG: ...").
RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& source);

// The dimensions in a JPEG's or PNG's header, without decoding the pixels:
// a server checks them before decode_image allocates height x width x 3
// bytes for a small file that claims to be huge. Throws CocoError as
// decode_image does for data that is neither format or has no readable header.
struct ImageDimensions {
  uint32_t height = 0;
  uint32_t width = 0;
};
ImageDimensions read_image_dimensions(std::span<const uint8_t> bytes, const std::string& source);

// Reads and decodes an image file; a missing file is a CocoError naming it.
RgbImage read_image(const std::string& path);

// Encoders, for the synthetic datasets and tests. PNG is lossless RGB (or,
// with gray = true, the first channel only as 8-bit grayscale); the output
// depends only on the pixels. JPEG is baseline 4:2:0 at `quality`.
std::vector<uint8_t> encode_png(const RgbImage& image, bool gray = false);
std::vector<uint8_t> encode_jpeg(const RgbImage& image, int quality = 90, bool gray = false);

// PNG of arbitrary 8-bit pixels with 1 (gray), 2 (gray+alpha), 3 (RGB) or 4
// (RGBA) channels, for tests of the decoder's conversions.
std::vector<uint8_t> encode_png_channels(std::span<const uint8_t> pixels, uint32_t height, uint32_t width,
                                         int channels);

// Writes bytes to a file, replacing it; CocoError naming the file on failure.
void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes);
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace dtrain::vision
