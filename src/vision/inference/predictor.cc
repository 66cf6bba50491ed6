#include "vision/inference/predictor.h"

#include <torch/torch.h>

#include <stdexcept>

#include "dtrain/torch.h"
#include "vision/inference/model_inference.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"

namespace dtrain::vision::inference {

namespace modeling = vision::modeling;

struct Predictor::Model {
  modeling::MaskRcnn net{nullptr};
};

Predictor::Predictor(const modeling::MaskRcnnOptions& options, int threads) : model_(std::make_unique<Model>()) {
  if (threads > 0) dtrain::libtorch::set_num_threads(threads);
  // Activations are the same sizes image after image: reuse their memory.
  dtrain::libtorch::retain_freed_memory();
  torch::manual_seed(0);
  try {
    model_->net = modeling::MaskRcnn(options);
  } catch (const c10::Error& error) {
    throw one_line_error(error);
  }
  model_->net->eval();
}

Predictor::~Predictor() = default;

size_t Predictor::load_weights(const std::string& path) {
  modeling::WeightsReport report;
  try {
    report = modeling::load_weights(*model_->net, path);
  } catch (const c10::Error& error) {
    throw one_line_error(error);
  }
  if (!report.reinitialized.empty()) {
    throw std::runtime_error(path + ": trained for another number of classes than MODEL.ROI_HEADS.NUM_CLASSES " +
                             std::to_string(model_->net->options().roi_heads.num_classes) + " (" +
                             report.reinitialized.front() + " differs); set NUM_CLASSES to the weights' count");
  }
  return report.loaded.size();
}

ImageDetections Predictor::detect(const vision::RgbImage& image) { return detect_image(*model_->net, image); }

}  // namespace dtrain::vision::inference
