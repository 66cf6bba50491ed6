// The network of SageMaker's data-parallel MNIST tutorial: two 3x3 convolutions (32, 64),
// 2x2 max-pool, dropout 0.25, a 128-unit dense layer, dropout 0.5, 10 outputs.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace dtrain::mnist {

class MnistNetImpl : public torch::nn::Module {
 public:
  MnistNetImpl();
  // Log-probabilities of the 10 digits for a standardised [N, 1, 28, 28] batch.
  at::Tensor forward(const at::Tensor& images);

 private:
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Dropout dropout1_{nullptr}, dropout2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(MnistNet);

}  // namespace dtrain::mnist
