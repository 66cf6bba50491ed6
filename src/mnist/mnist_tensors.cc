#include "mnist/mnist_tensors.h"

#include <cstring>

#include "mnist/mnist_idx.h"

namespace dtrain::mnist {

MnistTensors load_mnist(const std::string& directory, const std::string& split) {
  const mnist::MnistSplit raw = mnist::read_mnist_split(directory, split);
  const auto n = static_cast<std::int64_t>(raw.images.count);
  const auto h = static_cast<std::int64_t>(raw.images.rows), w = static_cast<std::int64_t>(raw.images.cols);
  at::Tensor pixels = at::empty({n, 1, h, w}, at::kByte);
  std::memcpy(pixels.data_ptr(), raw.images.pixels.data(), raw.images.pixels.size());
  at::Tensor labels = at::empty({n}, at::kByte);
  std::memcpy(labels.data_ptr(), raw.labels.data(), raw.labels.size());
  // Standardised with the training set's mean and deviation (0.1307, 0.3081), as PyTorch's
  // MNIST example does: it speeds up the first epoch noticeably.
  return {pixels.to(at::kFloat).div_(255.0).sub_(0.1307).div_(0.3081), labels.to(at::kLong)};
}

}  // namespace dtrain::mnist
