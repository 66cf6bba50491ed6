// Predictor on a CPU-sized model (random weights, every detection kept):
// a batch gives each image what it gets alone, whatever its neighbours'
// sizes, and devices LibTorch cannot use are refused in one line.
#include "vision/inference/predictor.h"

#include <gtest/gtest.h>

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/vision/modeling/small_model.h"
#include "vision/data/synthetic_shapes.h"

namespace dtrain::vision::inference {
namespace {

RgbImage shapes(uint32_t height, uint32_t width, uint64_t seed) {
  return generate_shapes_image(height, width, seed).image;
}

// Equal up to float rounding: scores within `tolerance`, box coordinates
// within `tolerance` relative to their size (pixels), labels and mask
// pixels exactly. (A batch runs other kernel blockings than one image, so
// sums round differently: a few ulps.)
void expect_same(const ImageDetections& batched, const ImageDetections& alone, double tolerance, size_t image) {
  SCOPED_TRACE("image " + std::to_string(image));
  ASSERT_EQ(batched.height, alone.height);
  ASSERT_EQ(batched.width, alone.width);
  ASSERT_EQ(batched.instances.size(), alone.instances.size());
  for (size_t i = 0; i < alone.instances.size(); ++i) {
    const DetectedInstance& b = batched.instances[i];
    const DetectedInstance& a = alone.instances[i];
    EXPECT_EQ(b.label, a.label) << "instance " << i;
    EXPECT_NEAR(b.score, a.score, tolerance) << "instance " << i;
    for (size_t c = 0; c < 4; ++c) {
      EXPECT_NEAR(b.box[c], a.box[c], tolerance * std::max(1.0f, std::abs(a.box[c])))
          << "instance " << i << " coordinate " << c;
    }
    EXPECT_EQ(b.mask, a.mask) << "instance " << i;
  }
}

TEST(Predictor, ABatchGivesEachImageWhatDetectGivesIt) {
  Predictor predictor(modeling::small_options(), 1);
  EXPECT_EQ(predictor.device(), "cpu");
  // Three padded sizes (96x96, 96x128, 128x96 after resizing to short side
  // 96): the two 64x64 images run together, the others on their own.
  const std::vector<RgbImage> images = {shapes(64, 64, 1), shapes(90, 120, 2), shapes(64, 64, 3), shapes(100, 80, 4)};
  const std::vector<ImageDetections> batched = predictor.detect_batch(images);
  ASSERT_EQ(batched.size(), images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const ImageDetections alone = predictor.detect(images[i]);
    EXPECT_GT(alone.instances.size(), 0u) << "image " << i << ": nothing to compare";
    expect_same(batched[i], alone, 1e-5, i);
  }
}

TEST(Predictor, ABatchOfOneSizeIsOneModelBatch) {
  Predictor predictor(modeling::small_options(), 1);
  std::vector<RgbImage> images;
  for (uint64_t seed = 10; seed < 14; ++seed) images.push_back(shapes(80, 80, seed));
  const std::vector<ImageDetections> batched = predictor.detect_batch(images);
  ASSERT_EQ(batched.size(), images.size());
  for (size_t i = 0; i < images.size(); ++i) expect_same(batched[i], predictor.detect(images[i]), 1e-5, i);
  EXPECT_TRUE(predictor.detect_batch({}).empty());
}

// A model trained in float16 (its config asks for float16 autocast) is served on the CPU in
// float32: exactly what a float32 model with the same weights detects.
TEST(Predictor, AFloat16ModelInfersInFloat32OnTheCpu) {
  modeling::MaskRcnnOptions float16 = modeling::small_options();
  float16.compute.mixed_precision = modeling::MixedPrecision::kFloat16;
  Predictor trained_in_float16(float16, 1);
  Predictor float32(modeling::small_options(), 1);
  const RgbImage image = shapes(100, 120, 5);
  expect_same(trained_in_float16.detect(image), float32.detect(image), 0.0, 0);
}

TEST(Predictor, RefusesDevicesLibTorchCannotUseInOneLine) {
  EXPECT_NO_THROW(check_device("cpu"));
  const auto message = [](const std::string& device) -> std::string {
    try {
      check_device(device);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "accepted";
  };
  for (const std::string bad : {"tpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", "cpu:0"}) {
    EXPECT_EQ(message(bad), bad + ": not a device LibTorch can run the model on; use cpu, cuda or cuda:N");
  }
  if (torch::cuda::is_available()) GTEST_SKIP() << "this LibTorch sees a GPU: cuda is not refused";
  const std::string why =
      ": LibTorch sees no CUDA device (a LibTorch built without CUDA, such as Debian's, never does)";
  EXPECT_EQ(message("cuda"), "cuda" + why);
  EXPECT_EQ(message("cuda:1"), "cuda:1" + why);
  try {
    Predictor predictor(modeling::small_options(), 1, "cuda");
    FAIL() << "a model was built on a GPU LibTorch does not see";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "cuda" + why);
  }
}

// Where LibTorch has a GPU: the same weights on cuda:0 score like the CPU.
// Kernels sum in other orders, so near-ties may swap: compare the best score.
TEST(Predictor, OnAGpuScoresAsTheCpuDoes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // TF32 would round convolutions and matrix products to 10-bit mantissas.
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
  Predictor cpu(modeling::small_options(), 1, "cpu"), gpu(modeling::small_options(), 1, "cuda");
  EXPECT_EQ(gpu.device(), "cuda:0");
  const std::vector<RgbImage> images = {shapes(64, 64, 1), shapes(64, 64, 2)};
  const std::vector<ImageDetections> on_gpu = gpu.detect_batch(images);
  for (size_t i = 0; i < images.size(); ++i) {
    const ImageDetections on_cpu = cpu.detect(images[i]);
    ASSERT_FALSE(on_cpu.instances.empty());
    ASSERT_FALSE(on_gpu[i].instances.empty()) << "image " << i;
    EXPECT_EQ(on_gpu[i].height, on_cpu.height);
    EXPECT_NEAR(on_gpu[i].instances[0].score, on_cpu.instances[0].score, 1e-3) << "image " << i;
  }
}

}  // namespace
}  // namespace dtrain::vision::inference
