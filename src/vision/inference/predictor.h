#pragma once

// The LibTorch side of `predict`: the model, its weights, threads, and
// images in and plain detections out. The header names no LibTorch type, so
// this is the app's only file that compiles against LibTorch.
#include <memory>
#include <string>

#include "vision/inference/image_detections.h"
#include "vision/data/image.h"
#include "vision/modeling/mask_rcnn_options.h"

namespace dtrain::vision::inference {

class Predictor {
 public:
  // Builds the model in inference mode with LibTorch using `threads` intra-op
  // threads. Weights start at a fixed random initialisation (seed 0), so runs
  // without weights repeat too.
  Predictor(const vision::modeling::MaskRcnnOptions& options, int threads);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  // Loads a torch.save state dict (torchvision's or dtrain's). Throws
  // std::runtime_error with one line naming the file: missing, not a
  // checkpoint, weights of another architecture, or trained for another
  // number of classes than the config's (predicting with freshly
  // initialised class layers would be noise). Returns how many tensors it set.
  size_t load_weights(const std::string& path);

  // Runs one image; throws std::runtime_error with a one-line message.
  ImageDetections detect(const vision::RgbImage& image);

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace dtrain::vision::inference
