#include "apps/serve/maskrcnn_endpoint.h"

#include "apps/serve/maskrcnn_payload.h"
#include "vision/inference/predictor.h"
#include "serving/model_error.h"
#include "vision/config/maskrcnn_defaults.h"
#include "vision/config/model_options.h"

namespace dtrain::serve {
namespace {

vision::modeling::MaskRcnnOptions model_options(const serving::ModelMetadata& model) {
  try {
    vision::config::Config config = vision::config::maskrcnn_defaults();
    config.merge_from_file(model.config.string());
    vision::modeling::MaskRcnnOptions options = vision::config::to_model_options(config);
    const int64_t classes = options.roi_heads.num_classes;
    if (classes != static_cast<int64_t>(model.categories.size()) + 1) {
      throw serving::ModelError(model.config.string() + ": MODEL.ROI_HEADS.NUM_CLASSES is " + std::to_string(classes) +
                                " but model.json lists " + std::to_string(model.categories.size()) +
                                " categories (NUM_CLASSES counts the background too)");
    }
    return options;
  } catch (const serving::ModelError&) {
    throw;
  } catch (const std::exception& e) {
    throw serving::ModelError(model.config.string() + ": " + e.what());
  }
}

class MaskRcnnEndpoint : public serving::Endpoint {
 public:
  MaskRcnnEndpoint(const serving::ModelMetadata& model, int threads, uint64_t max_pixels)
      : predictor_(model_options(model), threads), categories_(model.categories), max_pixels_(max_pixels) {
    try {
      predictor_.load_weights(model.weights.string());
    } catch (const std::exception& e) {
      throw serving::ModelError(e.what());  // names the file already
    }
  }

  serving::InvocationResponse invoke(const serving::InvocationRequest& request) override {
    const MaskRcnnRequest decoded = decode_maskrcnn_request(request, max_pixels_);
    vision::inference::ImageDetections detections;
    try {
      detections = predictor_.detect(decoded.image);
    } catch (const std::runtime_error& e) {
      // The image passed decoding but the model cannot use it (too thin to resize, say).
      throw serving::InvocationError(400, std::string("the model cannot process this image: ") + e.what());
    }
    return {200, "application/json", encode_maskrcnn_response(detections, categories_, decoded.score_threshold)};
  }

 private:
  vision::inference::Predictor predictor_;
  std::vector<serving::Category> categories_;
  uint64_t max_pixels_;
};

}  // namespace

std::unique_ptr<serving::Endpoint> make_maskrcnn_endpoint(const serving::ModelMetadata& model, int threads,
                                                          uint64_t max_image_pixels) {
  return std::make_unique<MaskRcnnEndpoint>(model, threads, max_image_pixels);
}

}  // namespace dtrain::serve
