#include "mnist/mnist_net.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace dtrain::mnist {

MnistNetImpl::MnistNetImpl() {
  conv1_ = register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 3)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
  dropout1_ = register_module("dropout1", torch::nn::Dropout(0.25));
  fc1_ = register_module("fc1", torch::nn::Linear(64 * 12 * 12, 128));
  dropout2_ = register_module("dropout2", torch::nn::Dropout(0.5));
  fc2_ = register_module("fc2", torch::nn::Linear(128, 10));
  // The tutorial's network is Keras': Glorot-uniform weights and zero biases. LibTorch's
  // default (Kaiming-uniform, a = sqrt(5)) starts fc1 about 2.4x smaller.
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    if (p.key().find("weight") != std::string::npos) {
      torch::nn::init::xavier_uniform_(p.value());
    } else {
      p.value().zero_();
    }
  }
}

at::Tensor MnistNetImpl::forward(const at::Tensor& images) {
  at::Tensor x = at::relu(conv1_->forward(images));
  x = at::relu(conv2_->forward(x));
  x = at::max_pool2d(x, {2, 2});
  x = dropout1_->forward(x).flatten(1);
  x = at::relu(fc1_->forward(x));
  x = dropout2_->forward(x);
  return at::log_softmax(fc2_->forward(x), 1);
}

}  // namespace dtrain::mnist
