#include "apps/serve/maskrcnn_payload.h"

#include <span>

#include <nlohmann/json.hpp>

#include "vision/inference/coco_results.h"
#include "serving/base64.h"
#include "vision/data/image_codec.h"
#include "vision/coco/coco_error.h"

namespace dtrain::serve {
namespace {

using nlohmann::json;
using serving::InvocationError;

vision::RgbImage decode_checked(std::span<const uint8_t> bytes, uint64_t max_pixels, const std::string& source) {
  try {
    const vision::ImageDimensions size = vision::read_image_dimensions(bytes, source);
    const uint64_t pixels = uint64_t{size.width} * size.height;
    if (pixels > max_pixels) {
      throw InvocationError(413, "image is " + std::to_string(size.width) + "x" + std::to_string(size.height) + " = " +
                                     std::to_string(pixels) + " pixels; the server accepts at most " +
                                     std::to_string(max_pixels) + " (--max-image-pixels)");
    }
    if (pixels == 0) throw InvocationError(400, "cannot decode the image: " + source + " has no pixels");
    return vision::decode_image(bytes, source);
  } catch (const vision::CocoError& e) {
    throw InvocationError(400, std::string("cannot decode the image: ") + e.what());
  }
}

}  // namespace

MaskRcnnRequest decode_maskrcnn_request(const serving::InvocationRequest& request, uint64_t max_pixels) {
  const std::string& type = request.content_type;
  if (request.body.empty()) throw InvocationError(400, "empty body: send a JPEG or PNG image");
  MaskRcnnRequest out;
  out.score_threshold = serving::number_parameter(request, "score_threshold", 0.0, 0.0, 1.0);
  if (type == "image/jpeg" || type == "image/png") {
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(request.body.data()), request.body.size());
    out.image = decode_checked(bytes, max_pixels, "body (" + type + ")");
    return out;
  }
  if (type != "application/json") {
    throw InvocationError(415, "unsupported content type '" + type +
                                   "': the Mask R-CNN model takes image/jpeg, image/png or application/json");
  }
  json document;
  try {
    document = json::parse(request.body);
  } catch (const json::exception& e) {
    throw InvocationError(400, std::string("body is not valid JSON: ") + e.what());
  }
  if (!document.is_object() || !document.contains("image") || !document["image"].is_string()) {
    throw InvocationError(400, "JSON body must be an object with \"image\": a base64 JPEG or PNG");
  }
  if (document.contains("score_threshold")) {
    const json& threshold = document["score_threshold"];
    if (!threshold.is_number() || threshold.get<double>() < 0 || threshold.get<double>() > 1) {
      throw InvocationError(400, "\"score_threshold\" must be a number in [0, 1], got " + threshold.dump());
    }
    out.score_threshold = threshold.get<double>();
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = serving::decode_base64(document["image"].get_ref<const std::string&>());
  } catch (const std::invalid_argument& e) {
    throw InvocationError(400, std::string("\"image\": ") + e.what());
  }
  out.image = decode_checked(bytes, max_pixels, "\"image\"");
  return out;
}

std::string encode_maskrcnn_response(const vision::inference::ImageDetections& detections,
                                     const std::vector<serving::Category>& categories, double score_threshold) {
  // Threshold first: only the kept masks are run-length encoded.
  vision::inference::ImageDetections kept;
  kept.height = detections.height;
  kept.width = detections.width;
  for (const vision::inference::DetectedInstance& instance : detections.instances) {
    if (instance.score >= score_threshold) kept.instances.push_back(instance);
  }
  nlohmann::ordered_json out_detections = nlohmann::ordered_json::array();
  const nlohmann::ordered_json results = vision::inference::coco_results(kept, 0);
  for (const auto& result : results) {
    const int64_t label = result["category_id"].get<int64_t>();
    const bool known = label >= 1 && static_cast<size_t>(label) <= categories.size();
    nlohmann::ordered_json detection;
    detection["category_id"] = known ? categories[static_cast<size_t>(label) - 1].id : label;
    detection["category_name"] = known ? categories[static_cast<size_t>(label) - 1].name : std::string();
    detection["score"] = result["score"];
    detection["bbox"] = result["bbox"];
    if (result.contains("segmentation")) detection["segmentation"] = result["segmentation"];
    out_detections.push_back(std::move(detection));
  }
  nlohmann::ordered_json body;
  body["width"] = detections.width;
  body["height"] = detections.height;
  body["detections"] = std::move(out_detections);
  return body.dump();
}

}  // namespace dtrain::serve
