// MNIST as tensors: images [N, 1, 28, 28] float, standardised; labels [N] int64.
#pragma once

#include <ATen/ATen.h>

#include <string>

namespace dtrain::mnist {

struct MnistTensors {
  at::Tensor images;
  at::Tensor labels;
};

// `split` is "train" or "t10k". Throws dtrain::mnist::DatasetError naming a bad file.
MnistTensors load_mnist(const std::string& directory, const std::string& split);

}  // namespace dtrain::mnist
