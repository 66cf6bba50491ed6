// The Mask R-CNN endpoint's request and response formats: images as bytes or
// base64 JSON, the score threshold from each place it can come from, the
// pixel limit checked before decoding, and detections as COCO results with
// the training set's category ids and names.
#include "apps/serve/maskrcnn_payload.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "serving/base64.h"
#include "vision/data/image_codec.h"
#include "vision/coco/rle_string.h"

namespace dtrain::serve {
namespace {

using nlohmann::json;
using serving::InvocationError;
using serving::InvocationRequest;

constexpr uint64_t kMaxPixels = 1 << 20;

std::string png_of(uint32_t height, uint32_t width) {
  vision::RgbImage image(height, width);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 7);
  const std::vector<uint8_t> bytes = vision::encode_png(image);
  return std::string(bytes.begin(), bytes.end());
}

std::string base64_of(const std::string& bytes) {
  return serving::encode_base64(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::pair<int, std::string> maskrcnn_error_of(const InvocationRequest& request, uint64_t max_pixels = kMaxPixels) {
  try {
    decode_maskrcnn_request(request, max_pixels);
  } catch (const InvocationError& e) {
    return {e.status(), e.what()};
  }
  return {0, ""};
}

TEST(MaskRcnnPayload, ImageBytesAndBase64JsonDecodeToTheSamePixels) {
  const std::string png = png_of(20, 30);
  const MaskRcnnRequest raw = decode_maskrcnn_request({"image/png", png, {}}, kMaxPixels);
  EXPECT_EQ(raw.image.width, 30u);
  EXPECT_EQ(raw.image.height, 20u);
  EXPECT_EQ(raw.score_threshold, 0.0);
  const MaskRcnnRequest wrapped = decode_maskrcnn_request(
      {"application/json", json{{"image", base64_of(png)}, {"score_threshold", 0.6}}.dump(), {}}, kMaxPixels);
  EXPECT_EQ(wrapped.image, raw.image);
  EXPECT_DOUBLE_EQ(wrapped.score_threshold, 0.6);
  vision::RgbImage rgb(16, 16);
  const std::vector<uint8_t> jpeg = vision::encode_jpeg(rgb);
  EXPECT_EQ(decode_maskrcnn_request({"image/jpeg", std::string(jpeg.begin(), jpeg.end()), {}}, kMaxPixels).image.width,
            16u);
  // The query parameter / custom attribute form.
  EXPECT_DOUBLE_EQ(
      decode_maskrcnn_request({"image/png", png, {{"score_threshold", "0.25"}}}, kMaxPixels).score_threshold, 0.25);
}

TEST(MaskRcnnPayload, BadRequestsGet4xxNamingTheProblem) {
  const std::string png = png_of(20, 30);
  EXPECT_EQ(maskrcnn_error_of({"text/plain", "x", {}}).first, 415);
  EXPECT_EQ(maskrcnn_error_of({"image/png", "", {}}).first, 400);
  EXPECT_EQ(maskrcnn_error_of({"image/png", png.substr(0, png.size() / 2), {}}).first, 400);
  EXPECT_NE(maskrcnn_error_of({"image/jpeg", "\xff\xd8\xff garbage", {}}).second.find("cannot decode the image"),
            std::string::npos);
  EXPECT_EQ(maskrcnn_error_of({"image/png", png, {{"score_threshold", "high"}}}),
            std::make_pair(400, std::string("parameter score_threshold must be a number in [0.0, 1.0], got 'high'")));
  EXPECT_EQ(maskrcnn_error_of({"application/json", R"({"img": "x"})", {}}).second,
            "JSON body must be an object with \"image\": a base64 JPEG or PNG");
  EXPECT_EQ(maskrcnn_error_of({"application/json", R"({"image": "a$b"})", {}}).second,
            "\"image\": base64: unexpected '$' at offset 1");
  EXPECT_EQ(maskrcnn_error_of({"application/json", json{{"image", base64_of(png)}, {"score_threshold", 2}}.dump(), {}})
                .second,
            "\"score_threshold\" must be a number in [0, 1], got 2");
  // Over the pixel limit: refused from the header, before decoding.
  EXPECT_EQ(maskrcnn_error_of({"image/png", png, {}}, 599),
            std::make_pair(
                413, std::string("image is 30x20 = 600 pixels; the server accepts at most 599 (--max-image-pixels)")));
}

TEST(MaskRcnnPayload, DetectionsAsCocoResultsWithCategoryNamesAboveTheThreshold) {
  vision::inference::ImageDetections detections;
  detections.height = 4;
  detections.width = 5;
  vision::inference::DetectedInstance strong;
  strong.box = {1, 1, 4, 3};
  strong.label = 2;
  strong.score = 0.9f;
  strong.mask.assign(20, 0);
  strong.mask[1 * 5 + 2] = 1;  // row 1, column 2
  vision::inference::DetectedInstance weak = strong;
  weak.label = 1;
  weak.score = 0.3f;
  detections.instances = {strong, weak};
  const std::vector<serving::Category> categories = {{10, "square"}, {20, "circle"}};

  json body = json::parse(encode_maskrcnn_response(detections, categories, 0.5));
  EXPECT_EQ(body["width"], 5);
  EXPECT_EQ(body["height"], 4);
  ASSERT_EQ(body["detections"].size(), 1u);
  const json& d = body["detections"][0];
  EXPECT_EQ(d["category_id"], 20);
  EXPECT_EQ(d["category_name"], "circle");
  EXPECT_EQ(d["bbox"], json::array({1.0, 1.0, 3.0, 2.0}));  // COCO x, y, width, height
  EXPECT_EQ(d["segmentation"]["size"], json::array({4, 5}));
  // Column-major runs: 9 zeros (columns 0-1 and the first of column 2), one 1, then 10 zeros.
  EXPECT_EQ(d["segmentation"]["counts"], vision::rle_counts_to_string(vision::RunLengthMask{4, 5, {9, 1, 10}}));

  body = json::parse(encode_maskrcnn_response(detections, categories, 0.0));
  ASSERT_EQ(body["detections"].size(), 2u);
  EXPECT_EQ(body["detections"][1]["category_name"], "square");
}

}  // namespace
}  // namespace dtrain::serve
