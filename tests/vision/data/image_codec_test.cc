#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "vision/data/image_codec.h"
#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

RgbImage pattern(uint32_t h, uint32_t w) {
  RgbImage image(h, w);
  for (uint32_t y = 0; y < h; ++y) {
    for (uint32_t x = 0; x < w; ++x) {
      uint8_t* p = image.at(y, x);
      p[0] = static_cast<uint8_t>(x * 7 + y);
      p[1] = static_cast<uint8_t>(y * 5);
      p[2] = static_cast<uint8_t>(255 - x * 3);
    }
  }
  return image;
}

std::string decode_error_of(const std::vector<uint8_t>& bytes) {
  try {
    decode_image(bytes, "img/17.jpg");
  } catch (const CocoError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ImageCodec, PngRoundTripsExactly) {
  const RgbImage image = pattern(13, 21);
  const RgbImage back = decode_image(encode_png(image), "t.png");
  EXPECT_EQ(back, image);
}

TEST(ImageCodec, PngGrayAndAlphaBecomeRgb) {
  // Gray: replicated into three channels.
  std::vector<uint8_t> gray = {0, 50, 100, 150, 200, 250};
  RgbImage g = decode_image(encode_png_channels(gray, 2, 3, 1), "g.png");
  ASSERT_EQ(g.height, 2u);
  ASSERT_EQ(g.width, 3u);
  for (size_t i = 0; i < gray.size(); ++i) {
    EXPECT_EQ(g.pixels[3 * i], gray[i]);
    EXPECT_EQ(g.pixels[3 * i + 1], gray[i]);
    EXPECT_EQ(g.pixels[3 * i + 2], gray[i]);
  }
  // RGBA: alpha dropped, colour kept (PIL's convert("RGB")), even where
  // alpha is 0.
  std::vector<uint8_t> rgba = {10, 20, 30, 255, 40, 50, 60, 0, 70, 80, 90, 128, 1, 2, 3, 4};
  RgbImage c = decode_image(encode_png_channels(rgba, 2, 2, 4), "c.png");
  EXPECT_EQ(c.pixels, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 1, 2, 3}));
  // Gray + alpha.
  std::vector<uint8_t> ga = {9, 0, 200, 255};
  RgbImage d = decode_image(encode_png_channels(ga, 1, 2, 2), "d.png");
  EXPECT_EQ(d.pixels, (std::vector<uint8_t>{9, 9, 9, 200, 200, 200}));
}

TEST(ImageCodec, JpegDecodesCloseToTheOriginal) {
  RgbImage image(32, 48);
  for (uint32_t y = 0; y < 32; ++y) {
    for (uint32_t x = 0; x < 48; ++x) {
      uint8_t* p = image.at(y, x);
      p[0] = static_cast<uint8_t>(x * 5);
      p[1] = static_cast<uint8_t>(y * 7);
      p[2] = 128;
    }
  }
  const RgbImage back = decode_image(encode_jpeg(image, 95), "t.jpg");
  ASSERT_EQ(back.height, 32u);
  ASSERT_EQ(back.width, 48u);
  double error = 0;
  for (size_t i = 0; i < image.pixels.size(); ++i) error += std::abs(image.pixels[i] - back.pixels[i]);
  EXPECT_LT(error / static_cast<double>(image.pixels.size()), 4.0);
}

TEST(ImageCodec, GrayJpegBecomesRgb) {
  RgbImage image(16, 16);
  for (uint32_t y = 0; y < 16; ++y) {
    for (uint32_t x = 0; x < 16; ++x) image.at(y, x)[0] = static_cast<uint8_t>(x * 16);
  }
  const RgbImage back = decode_image(encode_jpeg(image, 95, /*gray=*/true), "g.jpg");
  ASSERT_EQ(back.width, 16u);
  for (size_t i = 0; i < back.pixels.size(); i += 3) {
    EXPECT_EQ(back.pixels[i], back.pixels[i + 1]);
    EXPECT_EQ(back.pixels[i], back.pixels[i + 2]);
  }
  EXPECT_NEAR(back.at(5, 8)[0], 128, 6);
}

TEST(ImageCodec, CorruptOrUnknownDataNamesTheFile) {
  EXPECT_EQ(decode_error_of({1, 2, 3, 4}), "img/17.jpg: not a JPEG or PNG image");
  EXPECT_EQ(decode_error_of({}), "img/17.jpg: empty file, not an image");
  std::vector<uint8_t> jpeg = encode_jpeg(pattern(64, 64), 90);
  jpeg.resize(jpeg.size() / 2);
  EXPECT_EQ(decode_error_of(jpeg).rfind("img/17.jpg: corrupt JPEG: ", 0), 0u) << decode_error_of(jpeg);
  std::vector<uint8_t> png = encode_png(pattern(64, 64));
  png.resize(png.size() / 2);
  EXPECT_EQ(decode_error_of(png).rfind("img/17.jpg: corrupt PNG: ", 0), 0u) << decode_error_of(png);
  std::vector<uint8_t> garbled = encode_png(pattern(8, 8));
  for (size_t i = 40; i < garbled.size(); ++i) garbled[i] ^= 0x5A;
  EXPECT_EQ(decode_error_of(garbled).rfind("img/17.jpg: corrupt PNG: ", 0), 0u) << decode_error_of(garbled);
}

TEST(ImageCodec, ReadsFilesAndNamesMissingOnes) {
  testing::TempDir dir;
  const RgbImage image = pattern(5, 6);
  write_file_bytes(dir / "a.png", encode_png(image));
  EXPECT_EQ(read_image(dir / "a.png"), image);
  try {
    read_image(dir / "missing.jpg");
    FAIL();
  } catch (const CocoError& e) {
    EXPECT_EQ(std::string(e.what()), (dir / "missing.jpg") + ": cannot open file");
  }
}

}  // namespace
}  // namespace dtrain::vision
