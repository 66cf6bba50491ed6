#include "apps/serve/mnist_payload.h"

#include <algorithm>
#include <cmath>
#include <span>

#include <nlohmann/json.hpp>

#include "vision/data/image_codec.h"
#include "vision/coco/coco_error.h"

namespace dtrain::serve {
namespace {

using nlohmann::json;
using serving::InvocationError;

[[noreturn]] void bad_shape(const std::string& where, const std::string& what) {
  throw InvocationError(400, "JSON " + where + ": " + what +
                                 " (expected one 28x28 image as 28 rows of 28 numbers or 784 numbers, "
                                 "or a list of such images, optionally as {\"instances\": [...]})");
}

float intensity(const json& value, const std::string& where) {
  if (!value.is_number()) bad_shape(where, "a pixel must be a number, got " + std::string(value.type_name()));
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < 0 || v > 255) {
    throw InvocationError(400, "JSON " + where + ": pixel intensity " + value.dump() + " is outside 0..255");
  }
  return static_cast<float>(v);
}

void append_image(const json& image, const std::string& where, std::vector<float>& out) {
  if (image.size() == kMnistPixels && image[0].is_number()) {
    for (size_t i = 0; i < image.size(); ++i) out.push_back(intensity(image[i], where + "[" + std::to_string(i) + "]"));
    return;
  }
  if (image.size() != kMnistSide || !image[0].is_array()) {
    bad_shape(where, "an image has " + std::to_string(image.size()) + " entries");
  }
  for (size_t row = 0; row < image.size(); ++row) {
    const std::string row_where = where + "[" + std::to_string(row) + "]";
    const json& pixels = image[row];
    if (!pixels.is_array() || pixels.size() != kMnistSide) {
      bad_shape(row_where, "a row must be 28 numbers, got " +
                               (pixels.is_array() ? std::to_string(pixels.size()) + " entries" : pixels.type_name()));
    }
    for (size_t x = 0; x < pixels.size(); ++x) {
      out.push_back(intensity(pixels[x], row_where + "[" + std::to_string(x) + "]"));
    }
  }
}

MnistBatch decode_json(const std::string& body) {
  json document;
  try {
    document = json::parse(body);
  } catch (const json::exception& e) {
    throw InvocationError(400, std::string("body is not valid JSON: ") + e.what());
  }
  std::string where = "body";
  if (document.is_object()) {
    if (!document.contains("instances")) bad_shape(where, "an object must have \"instances\"");
    json instances = std::move(document["instances"]);
    document = std::move(instances);
    where = "instances";
  }
  if (!document.is_array() || document.empty()) bad_shape(where, "not a non-empty list");
  // One image is 784 numbers or 28 rows of 28; a batch is a list of images.
  // The first element tells which: a number, a row of 28, or an image.
  const json& first = document[0];
  const bool single =
      first.is_number() || (first.is_array() && first.size() == kMnistSide && !first.empty() && first[0].is_number());
  MnistBatch batch;
  if (single) {
    append_image(document, where, batch.pixels);
    batch.count = 1;
    return batch;
  }
  for (size_t i = 0; i < document.size(); ++i) {
    const std::string image_where = where + "[" + std::to_string(i) + "]";
    if (!document[i].is_array() || document[i].empty()) bad_shape(image_where, "an image must be a non-empty list");
    append_image(document[i], image_where, batch.pixels);
  }
  batch.count = document.size();
  return batch;
}

MnistBatch decode_picture(const std::string& body, const std::string& content_type) {
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  try {
    const vision::ImageDimensions size = vision::read_image_dimensions(bytes, "body");
    if (size.height != kMnistSide || size.width != kMnistSide) {
      throw InvocationError(400, "image is " + std::to_string(size.width) + "x" + std::to_string(size.height) +
                                     "; the MNIST model takes 28x28 grayscale");
    }
    const vision::RgbImage image = vision::decode_image(bytes, "body (" + content_type + ")");
    MnistBatch batch;
    batch.count = 1;
    batch.pixels.reserve(kMnistPixels);
    for (size_t i = 0; i < size_t{kMnistPixels}; ++i) {
      const uint8_t* rgb = image.pixels.data() + i * 3;
      // ITU-R BT.601 luma; a grayscale image has three equal channels and keeps its values.
      batch.pixels.push_back(std::round(0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2]));
    }
    return batch;
  } catch (const vision::CocoError& e) {
    throw InvocationError(400, std::string("cannot decode the image: ") + e.what());
  }
}

}  // namespace

MnistBatch decode_mnist_request(const serving::InvocationRequest& request) {
  const std::string& type = request.content_type;
  if (request.body.empty()) throw InvocationError(400, "empty body: send an image or JSON");
  if (type == "application/json") return decode_json(request.body);
  if (type == "image/png" || type == "image/jpeg") return decode_picture(request.body, type);
  throw InvocationError(
      415, "unsupported content type '" + type + "': the MNIST model takes image/png, image/jpeg or application/json");
}

std::string encode_mnist_response(const std::vector<float>& probabilities, size_t count) {
  json predictions = json::array();
  for (size_t i = 0; i < count; ++i) {
    const float* row = probabilities.data() + i * kMnistClasses;
    const auto best = std::max_element(row, row + kMnistClasses) - row;
    predictions.push_back({{"label", best}, {"probabilities", std::vector<float>(row, row + kMnistClasses)}});
  }
  return json{{"predictions", predictions}}.dump();
}

}  // namespace dtrain::serve
