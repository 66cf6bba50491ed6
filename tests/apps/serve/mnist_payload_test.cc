// The MNIST endpoint's request and response formats: every accepted form of
// an image or batch, and the 4xx error each malformed body gets.
#include "apps/serve/mnist_payload.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "vision/data/image_codec.h"

namespace dtrain::serve {
namespace {

using nlohmann::json;
using serving::InvocationError;
using serving::InvocationRequest;

// 28x28 with pixel i = i % 256.
std::vector<uint8_t> ramp() {
  std::vector<uint8_t> pixels(kMnistPixels);
  for (int i = 0; i < kMnistPixels; ++i) pixels[i] = static_cast<uint8_t>(i % 256);
  return pixels;
}

json rows_of(const std::vector<uint8_t>& pixels) {
  json rows = json::array();
  for (int y = 0; y < kMnistSide; ++y)
    rows.push_back(std::vector<int>(pixels.begin() + y * 28, pixels.begin() + y * 28 + 28));
  return rows;
}

std::pair<int, std::string> error_of(const InvocationRequest& request) {
  try {
    decode_mnist_request(request);
  } catch (const InvocationError& e) {
    return {e.status(), e.what()};
  }
  return {0, ""};
}

TEST(MnistPayload, GrayscalePngIsOneImageWithItsIntensities) {
  const std::vector<uint8_t> pixels = ramp();
  const std::vector<uint8_t> png = vision::encode_png_channels(pixels, 28, 28, 1);
  const MnistBatch batch = decode_mnist_request({"image/png", std::string(png.begin(), png.end()), {}});
  ASSERT_EQ(batch.count, 1u);
  ASSERT_EQ(batch.pixels.size(), size_t{kMnistPixels});
  for (int i = 0; i < kMnistPixels; ++i) ASSERT_EQ(batch.pixels[i], pixels[i]) << i;
}

TEST(MnistPayload, JsonRowsFlatAndBatches) {
  const std::vector<uint8_t> pixels = ramp();
  const json rows = rows_of(pixels);
  const json flat = std::vector<int>(pixels.begin(), pixels.end());
  for (const json& body : {rows, flat}) {
    const MnistBatch one = decode_mnist_request({"application/json", body.dump(), {}});
    ASSERT_EQ(one.count, 1u);
    EXPECT_EQ(one.pixels[300], 300 % 256);
  }
  for (const json& body :
       {json::array({rows, rows, rows}), json::array({flat, flat}), json{{"instances", {rows, rows}}}}) {
    const MnistBatch many = decode_mnist_request({"application/json", body.dump(), {}});
    EXPECT_EQ(many.count, body.is_object() ? 2u : body.size());
    EXPECT_EQ(many.pixels.size(), many.count * kMnistPixels);
    EXPECT_EQ(many.pixels[kMnistPixels + 5], 5);
  }
}

TEST(MnistPayload, BadBodiesGet4xxNamingTheProblem) {
  const std::vector<uint8_t> pixels = ramp();
  json rows = rows_of(pixels);
  EXPECT_EQ(error_of({"text/csv", "1,2,3", {}}).first, 415);
  EXPECT_NE(error_of({"text/csv", "1,2,3", {}}).second.find("unsupported content type 'text/csv'"), std::string::npos);
  EXPECT_EQ(error_of({"image/png", "", {}}), std::make_pair(400, std::string("empty body: send an image or JSON")));
  EXPECT_EQ(error_of({"image/png", "not a png", {}}).first, 400);
  EXPECT_NE(error_of({"image/png", "not a png", {}}).second.find("cannot decode the image"), std::string::npos);
  const std::vector<uint8_t> big = vision::encode_png_channels(std::vector<uint8_t>(30 * 28, 0), 28, 30, 1);
  EXPECT_EQ(error_of({"image/png", std::string(big.begin(), big.end()), {}}),
            std::make_pair(400, std::string("image is 30x28; the MNIST model takes 28x28 grayscale")));
  // A PNG cut in half decodes to an error, not a crash.
  const std::vector<uint8_t> png = vision::encode_png_channels(pixels, 28, 28, 1);
  EXPECT_EQ(
      error_of({"image/png", std::string(png.begin(), png.begin() + static_cast<long>(png.size() / 2)), {}}).first,
      400);

  EXPECT_NE(error_of({"application/json", "[1, 2", {}}).second.find("body is not valid JSON"), std::string::npos);
  EXPECT_NE(error_of({"application/json", "[]", {}}).second.find("JSON body: not a non-empty list"), std::string::npos);
  EXPECT_NE(error_of({"application/json", "[1, 2, 3]", {}}).second.find("JSON body: an image has 3 entries"),
            std::string::npos);
  rows[27].erase(0);
  EXPECT_NE(error_of({"application/json", rows.dump(), {}})
                .second.find("JSON body[27]: a row must be 28 numbers, got 27 entries"),
            std::string::npos);
  rows = rows_of(pixels);
  rows[3][4] = 256;
  EXPECT_NE(error_of({"application/json", rows.dump(), {}})
                .second.find("JSON body[3][4]: pixel intensity 256 is outside 0..255"),
            std::string::npos);
  rows[3][4] = "x";
  EXPECT_NE(error_of({"application/json", json::array({rows_of(pixels), rows}).dump(), {}})
                .second.find("JSON body[1][3][4]: a pixel must be a number, got string"),
            std::string::npos);
  EXPECT_NE(error_of({"application/json", R"({"images": []})", {}}).second.find("an object must have \"instances\""),
            std::string::npos);
}

TEST(MnistPayload, ResponseListsLabelAndProbabilitiesPerImage) {
  std::vector<float> probabilities(20, 0.0f);
  probabilities[7] = 1.0f;
  probabilities[10 + 2] = 0.75f;
  probabilities[10 + 3] = 0.25f;
  const json body = json::parse(encode_mnist_response(probabilities, 2));
  ASSERT_EQ(body["predictions"].size(), 2u);
  EXPECT_EQ(body["predictions"][0]["label"], 7);
  EXPECT_EQ(body["predictions"][1]["label"], 2);
  EXPECT_EQ(body["predictions"][1]["probabilities"].size(), 10u);
  EXPECT_DOUBLE_EQ(body["predictions"][1]["probabilities"][3].get<double>(), 0.25);
}

}  // namespace
}  // namespace dtrain::serve
