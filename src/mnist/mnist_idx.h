// Reads MNIST's idx files (big-endian magic 2051 for images, 2049 for labels). Plain C++:
// the trainer and the synthetic-dataset tools share it.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::mnist {

class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct MnistImages {
  std::size_t count = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major, 0 = background
};

MnistImages read_mnist_images(const std::string& path);
std::vector<std::uint8_t> read_mnist_labels(const std::string& path);

// The same from the file's bytes; `origin` names it in errors ("MNIST image file '<origin>'
// ..."). A header whose sizes do not match the bytes that follow is a DatasetError, however
// large the sizes it claims.
MnistImages parse_mnist_images(std::string_view bytes, const std::string& origin);
std::vector<std::uint8_t> parse_mnist_labels(std::string_view bytes, const std::string& origin);

// The four files of a split under `directory` ("train" or "t10k"), checked to agree.
struct MnistSplit {
  MnistImages images;
  std::vector<std::uint8_t> labels;
};
MnistSplit read_mnist_split(const std::string& directory, const std::string& split);

}  // namespace dtrain::mnist
