#include "vision/inference/model_inference.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace dtrain::vision::inference {

at::Tensor image_tensor(const vision::RgbImage& image) {
  // from_blob only views the pixels; the conversion copies them.
  const at::Tensor hwc = torch::from_blob(const_cast<uint8_t*>(image.pixels.data()),
                                          {int64_t{image.height}, int64_t{image.width}, 3}, torch::kUInt8);
  return hwc.permute({2, 0, 1}).to(torch::kFloat32).div_(255.0);
}

ImageDetections plain_detections(const vision::Detections& found, uint32_t height, uint32_t width) {
  ImageDetections out;
  out.height = height;
  out.width = width;
  const at::Tensor boxes = found.boxes.to(torch::kCPU, torch::kFloat32).contiguous();
  const at::Tensor labels = found.labels.to(torch::kCPU, torch::kInt64).contiguous();
  const at::Tensor scores = found.scores.to(torch::kCPU, torch::kFloat32).contiguous();
  at::Tensor masks;
  if (found.masks.defined()) {
    // Thresholded where they are: a GPU sends bytes back, not floats.
    masks =
        found.masks.reshape({-1, int64_t{height}, int64_t{width}}).gt(0.5).to(torch::kCPU, torch::kUInt8).contiguous();
  }
  const size_t pixels = size_t{height} * width;
  for (int64_t i = 0; i < boxes.size(0); ++i) {
    DetectedInstance instance;
    const float* box = boxes.data_ptr<float>() + i * 4;
    std::copy(box, box + 4, instance.box.begin());
    instance.label = labels.data_ptr<int64_t>()[i];
    instance.score = scores.data_ptr<float>()[i];
    if (masks.defined()) {
      const uint8_t* mask = masks.data_ptr<uint8_t>() + i * static_cast<int64_t>(pixels);
      instance.mask.assign(mask, mask + pixels);
    }
    out.instances.push_back(std::move(instance));
  }
  return out;
}

std::runtime_error one_line_error(const c10::Error& error) {
  std::string message = error.what_without_backtrace();
  message = message.substr(0, message.find('\n'));
  return std::runtime_error(message);
}

ImageDetections detect_image(vision::modeling::MaskRcnnImpl& model, const vision::RgbImage& image) {
  try {
    c10::InferenceMode inference;
    // The image goes where the model is; the detections come back to the CPU.
    const at::Device device = model.parameters().front().device();
    return plain_detections(model.detect({image_tensor(image).to(device)}).at(0), image.height, image.width);
  } catch (const c10::Error& error) {
    throw one_line_error(error);
  }
}

}  // namespace dtrain::vision::inference
