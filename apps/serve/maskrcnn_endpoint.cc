#include "apps/serve/maskrcnn_endpoint.h"

#include <exception>
#include <stdexcept>
#include <utility>
#include <vector>

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
  MaskRcnnEndpoint(const serving::ModelMetadata& model, int threads, uint64_t max_pixels, const std::string& device)
      : predictor_(model_options(model), threads, device), categories_(model.categories), max_pixels_(max_pixels) {
    try {
      predictor_.load_weights(model.weights.string());
    } catch (const std::exception& e) {
      throw serving::ModelError(e.what());  // names the file already
    }
  }

  serving::InvocationResponse invoke(const serving::InvocationRequest& request) override {
    const MaskRcnnRequest decoded = decode_maskrcnn_request(request, max_pixels_);
    return respond(detect_alone(decoded.image), decoded.score_threshold);
  }

  // The images that decode run as one call of detect_batch; a request that
  // does not decode fails alone, before the model runs.
  std::vector<serving::InvocationOutcome> invoke_batch(
      const std::vector<serving::InvocationRequest>& requests) override {
    std::vector<serving::InvocationOutcome> outcomes(requests.size());
    std::vector<size_t> owners;  // the request of each image
    std::vector<vision::RgbImage> images;
    std::vector<double> thresholds;
    for (size_t i = 0; i < requests.size(); ++i) {
      try {
        MaskRcnnRequest decoded = decode_maskrcnn_request(requests[i], max_pixels_);
        images.push_back(std::move(decoded.image));
        thresholds.push_back(decoded.score_threshold);
        owners.push_back(i);
      } catch (...) {
        outcomes[i].error = std::current_exception();
      }
    }
    std::vector<vision::inference::ImageDetections> detections;
    try {
      detections = predictor_.detect_batch(images);
    } catch (const std::runtime_error&) {
      // An image the model cannot use fails its whole batch: run each image
      // alone, so that only its own request fails.
      for (size_t k = 0; k < images.size(); ++k) outcomes[owners[k]] = answer_alone(images[k], thresholds[k]);
      return outcomes;
    }
    for (size_t k = 0; k < images.size(); ++k) outcomes[owners[k]].response = respond(detections[k], thresholds[k]);
    return outcomes;
  }

 private:
  vision::inference::ImageDetections detect_alone(const vision::RgbImage& image) {
    try {
      return predictor_.detect(image);
    } catch (const std::runtime_error& e) {
      // The image passed decoding but the model cannot use it (too thin to resize, say).
      throw serving::InvocationError(400, std::string("the model cannot process this image: ") + e.what());
    }
  }

  serving::InvocationOutcome answer_alone(const vision::RgbImage& image, double score_threshold) {
    serving::InvocationOutcome outcome;
    try {
      outcome.response = respond(detect_alone(image), score_threshold);
    } catch (...) {
      outcome.error = std::current_exception();
    }
    return outcome;
  }

  serving::InvocationResponse respond(const vision::inference::ImageDetections& detections, double score_threshold) {
    return {200, "application/json", encode_maskrcnn_response(detections, categories_, score_threshold)};
  }

  vision::inference::Predictor predictor_;
  std::vector<serving::Category> categories_;
  uint64_t max_pixels_;
};

}  // namespace

std::unique_ptr<serving::Endpoint> make_maskrcnn_endpoint(const serving::ModelMetadata& model, int threads,
                                                          uint64_t max_image_pixels, const std::string& device) {
  return std::make_unique<MaskRcnnEndpoint>(model, threads, max_image_pixels, device);
}

}  // namespace dtrain::serve
