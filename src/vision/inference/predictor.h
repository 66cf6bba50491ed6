#pragma once

// The LibTorch side of `predict` and `serve`: the model on its device, its
// weights, threads, and images in and plain detections out. The header names
// no LibTorch type, so the apps' files that include it compile without
// LibTorch.
#include <memory>
#include <string>
#include <vector>

#include "vision/inference/image_detections.h"
#include "vision/data/image.h"
#include "vision/modeling/mask_rcnn_options.h"

namespace dtrain::vision::inference {

// Checks that LibTorch can run a model on `device`: "cpu", "cuda" (the first
// GPU, cuda:0) or "cuda:N". Throws std::invalid_argument with one line that
// starts with the device, e.g. "cuda: LibTorch sees no CUDA device (...)",
// so that a caller can put the option's name in front.
void check_device(const std::string& device);

class Predictor {
 public:
  // Builds the model in inference mode with LibTorch using `threads` intra-op
  // threads, and puts it on `device` (see check_device, which it calls).
  // Weights start at a fixed random initialisation (seed 0, drawn on the
  // CPU), so runs without weights repeat too, on any device.
  Predictor(const vision::modeling::MaskRcnnOptions& options, int threads, const std::string& device = "cpu");
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  // Loads a torch.save state dict (torchvision's or dtrain's): read on the
  // CPU, copied onto the model's device. Throws std::runtime_error with one
  // line naming the file: missing, not a checkpoint, weights of another
  // architecture, or trained for another number of classes than the config's
  // (predicting with freshly initialised class layers would be noise).
  // Returns how many tensors it set.
  size_t load_weights(const std::string& path);

  // Runs one image; throws std::runtime_error with a one-line message.
  ImageDetections detect(const vision::RgbImage& image);

  // Runs several images, one model batch per padded size, and returns their
  // detections in order. The model pads a batch to its largest image, and
  // the padding changes what the convolutions see near an image's border
  // (on a small model, scores moved by 0.015 and detections reordered):
  // batched only with images of its own padded size, an image gets what
  // detect() gives it, up to float rounding (a few ulps), whatever else is
  // in the batch. Throws std::runtime_error (one line) when the model cannot
  // run one of them.
  std::vector<ImageDetections> detect_batch(const std::vector<vision::RgbImage>& images);

  // The device the model is on, as LibTorch names it ("cpu", "cuda:0").
  std::string device() const;

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace dtrain::vision::inference
