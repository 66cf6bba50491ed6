#include "apps/serve/mnist_endpoint.h"

#include <torch/serialize.h>

#include <cstring>

#include "mnist/mnist_net.h"
#include "apps/serve/mnist_payload.h"
#include "serving/model_error.h"
#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/zip_directory.h"

namespace dtrain::serve {
namespace {

class MnistEndpoint : public serving::Endpoint {
 public:
  MnistEndpoint(const serving::ModelMetadata& model, const std::string& device) : device_(device) {
    try {
      // LibTorch's reader allocates what each record of the archive claims.
      vision::torch_save::check_archive_sizes(model.weights.string());
    } catch (const vision::torch_save::CheckpointError& e) {
      throw serving::ModelError(e.what());
    }
    try {
      // Loaded on the CPU, where dtrain-mnist saved them, then moved.
      torch::load(net_, model.weights.string(), torch::Device(torch::kCPU));
    } catch (const c10::Error& e) {
      const std::string message = e.what_without_backtrace();
      throw serving::ModelError(model.weights.string() +
                                ": not the MNIST network's weights: " + message.substr(0, message.find('\n')));
    }
    net_->to(device_);
    net_->eval();  // dropout off
  }

  serving::InvocationResponse invoke(const serving::InvocationRequest& request) override {
    const MnistBatch batch = decode_mnist_request(request);
    std::vector<float> probabilities(batch.count * kMnistClasses);
    {
      c10::InferenceMode inference;
      const auto n = static_cast<int64_t>(batch.count);
      const at::Tensor pixels =
          at::from_blob(const_cast<float*>(batch.pixels.data()), {n, 1, kMnistSide, kMnistSide}, at::kFloat);
      // The trainer's standardisation (apps/mnist/mnist_tensors.cc).
      const at::Tensor images = pixels.to(device_).div(255.0).sub_(0.1307).div_(0.3081);
      const at::Tensor out = net_->forward(images).exp().to(at::kCPU).contiguous();
      std::memcpy(probabilities.data(), out.data_ptr<float>(), probabilities.size() * sizeof(float));
    }
    return {200, "application/json", encode_mnist_response(probabilities, batch.count)};
  }

 private:
  mnist::MnistNet net_;
  at::Device device_;
};

}  // namespace

std::unique_ptr<serving::Endpoint> make_mnist_endpoint(const serving::ModelMetadata& model, const std::string& device) {
  return std::make_unique<MnistEndpoint>(model, device);
}

}  // namespace dtrain::serve
