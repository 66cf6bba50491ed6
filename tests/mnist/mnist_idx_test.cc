// The MNIST idx reader: errors name the file and what is wrong with it.
#include "mnist/mnist_idx.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

}  // namespace
}  // namespace dtrain::mnist
