#include "vision/inference/predictor.h"

#include <c10/core/DeviceGuard.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <utility>

#include "dtrain/torch_threads.h"
#include "vision/inference/model_inference.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"

namespace dtrain::vision::inference {
namespace {

namespace modeling = vision::modeling;

// "cpu", "cuda" (cuda:0) or "cuda:N", checked against the GPUs LibTorch sees.
at::Device parse_device(const std::string& name) {
  if (name == "cpu") return at::kCPU;
  int index = 0;
  if (name != "cuda") {
    const std::string prefix = "cuda:";
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    if (name.rfind(prefix, 0) != 0 || first == last || std::from_chars(first, last, index).ptr != last || index < 0) {
      throw std::invalid_argument(name + ": not a device LibTorch can run the model on; use cpu, cuda or cuda:N");
    }
  }
  if (!torch::cuda::is_available()) {
    throw std::invalid_argument(name +
                                ": LibTorch sees no CUDA device (a LibTorch built without CUDA, such as "
                                "Debian's, never does)");
  }
  const auto gpus = static_cast<int>(torch::cuda::device_count());
  if (index >= gpus) {
    throw std::invalid_argument(name + ": LibTorch sees only " + std::to_string(gpus) + " CUDA device(s)");
  }
  return {at::kCUDA, static_cast<c10::DeviceIndex>(index)};
}

// Indices of `images` grouped by the size the model pads them to, groups in
// order of their first image: a batch of one group needs no extra padding.
std::vector<std::vector<size_t>> same_padded_size(const std::vector<vision::RgbImage>& images,
                                                  const modeling::TransformOptions& transform) {
  std::vector<std::pair<vision::ImageSize, std::vector<size_t>>> groups;
  const int64_t stride = transform.size_divisible;
  for (size_t i = 0; i < images.size(); ++i) {
    const vision::ImageSize resized = modeling::ImageTransform::resized_size(
        {int64_t{images[i].height}, int64_t{images[i].width}}, static_cast<double>(transform.min_size_test),
        static_cast<double>(transform.max_size_test));
    const vision::ImageSize padded{(resized[0] + stride - 1) / stride * stride,
                                   (resized[1] + stride - 1) / stride * stride};
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == padded; });
    if (group == groups.end()) group = groups.insert(groups.end(), {padded, {}});
    group->second.push_back(i);
  }
  std::vector<std::vector<size_t>> indices;
  for (auto& group : groups) indices.push_back(std::move(group.second));
  return indices;
}

}  // namespace

void check_device(const std::string& device) { parse_device(device); }

struct Predictor::Model {
  modeling::MaskRcnn net{nullptr};
  at::Device device{at::kCPU};
};

Predictor::Predictor(const modeling::MaskRcnnOptions& options, int threads, const std::string& device)
    : model_(std::make_unique<Model>()) {
  model_->device = parse_device(device);
  if (threads > 0) dtrain::libtorch::set_num_threads(threads);
  // Activations are the same sizes image after image: reuse their memory.
  dtrain::libtorch::retain_freed_memory();
  torch::manual_seed(0);
  // A model trained in float16 (its config says SOLVER.AMP float16) infers in float32 on the
  // CPU, whose autocast has no float16.
  modeling::MaskRcnnOptions on_device = options;
  if (!model_->device.is_cuda() && on_device.compute.mixed_precision == modeling::MixedPrecision::kFloat16) {
    on_device.compute.mixed_precision = modeling::MixedPrecision::kOff;
  }
  try {
    model_->net = modeling::MaskRcnn(on_device);
    model_->net->to(model_->device);
  } catch (const c10::Error& error) {
    throw one_line_error(error);
  }
  model_->net->eval();
}

Predictor::~Predictor() = default;

size_t Predictor::load_weights(const std::string& path) {
  modeling::WeightsReport report;
  try {
    // The file is read on the CPU; each tensor is copied into the model where it is.
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

ImageDetections Predictor::detect(const vision::RgbImage& image) {
  // The detection kernels queue on the current device's stream: make it the model's.
  const c10::DeviceGuard on_model_device(model_->device);
  return detect_image(*model_->net, image);
}

std::vector<ImageDetections> Predictor::detect_batch(const std::vector<vision::RgbImage>& images) {
  std::vector<ImageDetections> out(images.size());
  for (const std::vector<size_t>& group : same_padded_size(images, model_->net->options().transform)) {
    if (group.size() == 1) {
      out[group[0]] = detect(images[group[0]]);
      continue;
    }
    const c10::DeviceGuard on_model_device(model_->device);
    try {
      c10::InferenceMode inference;
      std::vector<at::Tensor> tensors;
      for (size_t i : group) tensors.push_back(image_tensor(images[i]).to(model_->device));
      const std::vector<vision::Detections> found = model_->net->detect(tensors);
      for (size_t k = 0; k < group.size(); ++k) {
        out[group[k]] = plain_detections(found.at(k), images[group[k]].height, images[group[k]].width);
      }
    } catch (const c10::Error& error) {
      throw one_line_error(error);
    }
  }
  return out;
}

std::string Predictor::device() const { return model_->device.str(); }

}  // namespace dtrain::vision::inference
