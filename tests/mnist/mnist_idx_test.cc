// The MNIST idx reader: errors name the file and what is wrong with it.
#include "mnist/mnist_idx.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace dtrain::mnist {
namespace {

namespace fs = std::filesystem;

TEST(MnistReader, MissingAndMalformedFilesAreNamed) {
  const dtrain::testing::TempDir scratch;
  const fs::path& dir = scratch.path();
  try {
    mnist::read_mnist_split(dir.string(), "train");
    FAIL();
  } catch (const mnist::DatasetError& e) {
    EXPECT_NE(std::string(e.what()).find("train-images-idx3-ubyte"), std::string::npos);
  }
  const auto write = [](const fs::path& p, std::vector<unsigned char> bytes) {
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  write(dir / "bad-images", {0, 0, 8, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3, 4});
  EXPECT_THROW(mnist::read_mnist_images((dir / "bad-images").string()), mnist::DatasetError);  // magic 2049
  write(dir / "short-images", {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 1, 2, 3});
  try {
    mnist::read_mnist_images((dir / "short-images").string());
    FAIL();
  } catch (const mnist::DatasetError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 24"), std::string::npos) << e.what();
  }
  write(dir / "labels", {0, 0, 8, 1, 0, 0, 0, 2, 3, 12});
  EXPECT_THROW(mnist::read_mnist_labels((dir / "labels").string()), mnist::DatasetError);  // label 12
}

// 2^22 images of 2^22 x 2^22 pixels need 2^66 bytes, which is 0 modulo 2^64: a 16-byte header
// claiming them was taken for a valid empty file, and the images' count then led readers of
// the pixels out of bounds (found writing the mnist_idx fuzz target).
TEST(MnistReader, AHeaderWhoseSizesOverflowSixtyFourBitsIsRefused) {
  const std::string header("\x00\x00\x08\x03\x00\x40\x00\x00\x00\x40\x00\x00\x00\x40\x00\x00", 16);
  try {
    parse_mnist_images(header, "huge");
    FAIL() << "accepted a header claiming 2^66 pixels in 16 bytes";
  } catch (const DatasetError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "MNIST image file 'huge' has 16 bytes; its header (4194304 images of 4194304x4194304) needs more than 2^64");
  }
}

TEST(MnistReader, ParsesImagesAndLabelsFromBytes) {
  const std::string images("\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02\x01\x02\x03\x04", 20);
  const MnistImages parsed = parse_mnist_images(images, "two");
  EXPECT_EQ(parsed.count, 2u);
  EXPECT_EQ(parsed.rows, 1u);
  EXPECT_EQ(parsed.cols, 2u);
  EXPECT_EQ(parsed.pixels, (std::vector<std::uint8_t>{1, 2, 3, 4}));
  const std::string labels("\x00\x00\x08\x01\x00\x00\x00\x02\x07\x09", 10);
  EXPECT_EQ(parse_mnist_labels(labels, "two"), (std::vector<std::uint8_t>{7, 9}));
}

}  // namespace
}  // namespace dtrain::mnist
