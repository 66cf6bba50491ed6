#include "mnist/mnist_idx.h"

#include <cstdint>
#include <fstream>
#include <iterator>

namespace dtrain::mnist {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DatasetError("MNIST file '" + path + "' cannot be opened (run scripts/setup to unpack MNIST)");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::uint32_t big_endian_u32(std::string_view bytes, std::size_t offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data()) + offset;
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

MnistImages read_mnist_images(const std::string& path) { return parse_mnist_images(read_file(path), path); }

std::vector<std::uint8_t> read_mnist_labels(const std::string& path) {
  return parse_mnist_labels(read_file(path), path);
}

MnistImages parse_mnist_images(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 16) throw DatasetError("MNIST image file '" + path + "' is too short for its header");
  const std::uint32_t magic = big_endian_u32(bytes, 0);
  if (magic != 2051) {
    throw DatasetError("MNIST image file '" + path + "' has magic " + std::to_string(magic) + ", expected 2051");
  }
  MnistImages images;
  images.count = big_endian_u32(bytes, 4);
  images.rows = big_endian_u32(bytes, 8);
  images.cols = big_endian_u32(bytes, 12);
  // Three 32-bit sizes multiply past 64 bits: 2^22 images of 2^22 x 2^22 pixels "need" 16
  // bytes modulo 2^64. Their product is compared in 128 bits.
  const unsigned __int128 needed = static_cast<unsigned __int128>(images.count) * images.rows * images.cols + 16;
  if (needed != bytes.size()) {
    const std::string needs =
        needed <= UINT64_MAX ? std::to_string(static_cast<std::uint64_t>(needed)) : std::string("more than 2^64");
    throw DatasetError("MNIST image file '" + path + "' has " + std::to_string(bytes.size()) + " bytes; its header (" +
                       std::to_string(images.count) + " images of " + std::to_string(images.rows) + "x" +
                       std::to_string(images.cols) + ") needs " + needs);
  }
  images.pixels.assign(bytes.begin() + 16, bytes.end());
  return images;
}

std::vector<std::uint8_t> parse_mnist_labels(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 8) throw DatasetError("MNIST label file '" + path + "' is too short for its header");
  const std::uint32_t magic = big_endian_u32(bytes, 0);
  if (magic != 2049) {
    throw DatasetError("MNIST label file '" + path + "' has magic " + std::to_string(magic) + ", expected 2049");
  }
  const std::size_t count = big_endian_u32(bytes, 4);
  if (bytes.size() != 8 + count) {
    throw DatasetError("MNIST label file '" + path + "' has " + std::to_string(bytes.size()) + " bytes; its header (" +
                       std::to_string(count) + " labels) needs " + std::to_string(8 + count));
  }
  std::vector<std::uint8_t> labels(bytes.begin() + 8, bytes.end());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] > 9) {
      throw DatasetError("MNIST label file '" + path + "': label " + std::to_string(i) + " is " +
                         std::to_string(labels[i]) + ", outside 0..9");
    }
  }
  return labels;
}

MnistSplit read_mnist_split(const std::string& directory, const std::string& split) {
  MnistSplit result;
  const std::string images_path = directory + "/" + split + "-images-idx3-ubyte";
  const std::string labels_path = directory + "/" + split + "-labels-idx1-ubyte";
  result.images = read_mnist_images(images_path);
  result.labels = read_mnist_labels(labels_path);
  if (result.images.count != result.labels.size()) {
    throw DatasetError("MNIST " + split + " split in '" + directory + "': " + std::to_string(result.images.count) +
                       " images but " + std::to_string(result.labels.size()) + " labels");
  }
  return result;
}

}  // namespace dtrain::mnist
