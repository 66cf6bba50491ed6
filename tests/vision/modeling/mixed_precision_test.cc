// Mixed precision and channels-last on the CPU (bfloat16: LibTorch's CPU autocast), the
// same code paths a GPU takes with float16: what autocast changes (the networks' arithmetic)
// and what it must not (parameters, gradients, box geometry and losses stay float32).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "tests/support/temp_dir.h"
#include "tests/vision/modeling/small_model.h"
#include "vision/modeling/autocast.h"
#include "vision/modeling/model_weights.h"
#include "vision/ops/roi_align.h"

namespace dtrain::vision::modeling {
namespace {

at::Tensor convolve(const at::Tensor& x) { return at::conv2d(x, at::ones({1, 1, 3, 3})); }

TEST(AutocastRegion, RunsConvolutionsInBfloat16AndRestoresAutocastOnExit) {
  const at::Tensor x = at::rand({1, 1, 8, 8});
  {
    const AutocastRegion outer(MixedPrecision::kBFloat16, at::kCPU);
    EXPECT_EQ(convolve(x).scalar_type(), at::kBFloat16);
    { const AutocastRegion inner(MixedPrecision::kBFloat16, at::kCPU); }
    EXPECT_EQ(convolve(x).scalar_type(), at::kBFloat16) << "an inner region's end switched the outer one off";
  }
  EXPECT_EQ(convolve(x).scalar_type(), at::kFloat);
  {
    const AutocastRegion off(MixedPrecision::kOff, at::kCPU);
    EXPECT_EQ(convolve(x).scalar_type(), at::kFloat);
  }
}

TEST(AutocastRegion, RefusesFloat16OnTheCpu) {
  try {
    const AutocastRegion region(MixedPrecision::kFloat16, at::kCPU);
    FAIL() << "float16 autocast on the CPU was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("on the CPU use bfloat16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(convolve(at::rand({1, 1, 4, 4})).scalar_type(), at::kFloat);
}

TEST(AutocastRegion, SixteenBitFeaturesPoolInFloat32AndKeepTheirType) {
  const at::Tensor features = at::rand({1, 4, 16, 16}).to(at::kBFloat16).requires_grad_();
  const at::Tensor rois = torch::tensor({{0.0f, 1.5f, 2.0f, 11.0f, 9.5f}, {0.0f, -3.0f, 4.0f, 20.0f, 30.0f}});
  const at::Tensor pooled = ops::roi_align(features, rois, 1.0, 3, 3, 2, false);
  EXPECT_EQ(pooled.scalar_type(), at::kBFloat16);
  const at::Tensor in_float = ops::roi_align(features.detach().to(at::kFloat), rois, 1.0, 3, 3, 2, false);
  EXPECT_TRUE(pooled.detach().equal(in_float.to(at::kBFloat16)));
  pooled.sum().backward();
  ASSERT_TRUE(features.grad().defined());
  EXPECT_EQ(features.grad().scalar_type(), at::kBFloat16);
  EXPECT_GT(features.grad().to(at::kFloat).abs().sum().item<double>(), 0.0);
}

// The same weights (same seed) and samples (same generator seed) in float32 and bfloat16.
struct TwoModels {
  MaskRcnn full{nullptr}, mixed{nullptr};
};

TwoModels float32_and(const ComputeOptions& compute) {
  MaskRcnnOptions options = small_options();
  torch::manual_seed(3);
  TwoModels models{MaskRcnn(options), nullptr};
  options.compute = compute;
  torch::manual_seed(3);
  models.mixed = MaskRcnn(options);
  return models;
}

LossDict scene_losses(MaskRcnn& model) {
  auto [image, target] = square_scene(90, 120, 30, 20, 40);
  auto [image2, target2] = square_scene(100, 80, 10, 50, 30);
  model->train();
  return model->losses({image, image2}, {target, target2}, at::make_generator<at::CPUGeneratorImpl>(11));
}

double total_of(const LossDict& losses) {
  double total = 0;
  for (const auto& [name, value] : losses) total += value.item<double>();
  return total;
}

TEST(MixedPrecision, Bfloat16TrainsWithFloat32ParametersGradientsAndLosses) {
  TwoModels models = float32_and({MixedPrecision::kBFloat16, false});
  const LossDict full = scene_losses(models.full);
  const LossDict mixed = scene_losses(models.mixed);
  ASSERT_EQ(mixed.size(), full.size());
  at::Tensor total = at::zeros({});
  for (const auto& [name, value] : mixed) {
    EXPECT_EQ(value.scalar_type(), at::kFloat) << name;
    EXPECT_TRUE(std::isfinite(value.item<double>())) << name;
    total = total + value;
  }
  // bfloat16 keeps 8 bits of mantissa: the same losses to a few percent, not to the bit.
  EXPECT_NEAR(total.item<double>(), total_of(full), 0.1 * total_of(full));
  EXPECT_NE(total.item<double>(), total_of(full)) << "autocast changed nothing";
  total.backward();
  size_t with_gradients = 0;
  for (const auto& item : models.mixed->named_parameters()) {
    EXPECT_EQ(item.value().scalar_type(), at::kFloat) << item.key();
    if (!item.value().grad().defined()) continue;
    ++with_gradients;
    EXPECT_EQ(item.value().grad().scalar_type(), at::kFloat) << item.key();
    EXPECT_TRUE(item.value().grad().isfinite().all().item<bool>()) << item.key();
  }
  EXPECT_GT(with_gradients, 20u);
}

TEST(MixedPrecision, Bfloat16DetectionsAreFloat32) {
  TwoModels models = float32_and({MixedPrecision::kBFloat16, false});
  models.mixed->eval();
  torch::NoGradGuard no_grad;
  auto [image, target] = square_scene(90, 120, 30, 20, 40);
  const std::vector<Detections> found = models.mixed->detect({image});
  ASSERT_EQ(found.size(), 1u);
  ASSERT_GT(found[0].boxes.size(0), 0) << "score threshold 0 keeps detections";
  EXPECT_EQ(found[0].boxes.scalar_type(), at::kFloat);
  EXPECT_EQ(found[0].scores.scalar_type(), at::kFloat);
  EXPECT_EQ(found[0].masks.scalar_type(), at::kFloat);
  EXPECT_TRUE(found[0].boxes.isfinite().all().item<bool>());
}

TEST(ChannelsLast, TrainsAsTheContiguousModelAndWritesContiguousWeights) {
  TwoModels models = float32_and({MixedPrecision::kOff, true});
  size_t convolutions = 0;
  for (const auto& item : models.mixed->named_parameters()) {
    if (item.value().dim() != 4) continue;
    ++convolutions;
    // The RoI heads take RoIAlign's NCHW output and stay NCHW (a 1x1 kernel is both).
    const bool nchw = item.key().rfind("roi_heads.", 0) == 0;
    const at::MemoryFormat layout = nchw ? at::MemoryFormat::Contiguous : at::MemoryFormat::ChannelsLast;
    EXPECT_TRUE(item.value().is_contiguous(layout)) << item.key();
  }
  EXPECT_GT(convolutions, 20u);
  const LossDict full = scene_losses(models.full);
  const LossDict nhwc = scene_losses(models.mixed);
  for (const auto& [name, value] : full) {
    EXPECT_NEAR(nhwc.at(name).item<double>(), value.item<double>(), 1e-3 * std::abs(value.item<double>()) + 1e-6)
        << name;
  }

  // What is written does not depend on the layout: a contiguous model loads it to the bit.
  const dtrain::testing::TempDir dir;
  const std::string path = (dir.path() / "nhwc.pth").string();
  save_weights(*models.mixed, path);
  torch::manual_seed(99);
  MaskRcnn loaded(small_options());
  load_weights(*loaded, path);
  const auto written = models.mixed->named_parameters();
  for (const auto& item : loaded->named_parameters()) {
    EXPECT_TRUE(item.value().equal(written[item.key()])) << item.key();
  }
}

// The trainer's warning about bfloat16 autocast rests on this: where the kernel lists either
// flag (read from the same CPUID bits), the CPU has it. Not the converse: a kernel may hide a
// flag it does not know or that was switched off at boot.
TEST(CpuComputesBfloat16, SeesWhatTheKernelsCpuFlagsList) {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {}
  if (line.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  std::istringstream flags(line.substr(line.find(':') + 1));
  bool listed = false;
  for (std::string flag; flags >> flag;) listed |= flag == "avx512_bf16" || flag == "amx_bf16";
  if (listed) EXPECT_TRUE(cpu_computes_bfloat16()) << line;
#else
  EXPECT_TRUE(cpu_computes_bfloat16());
#endif
}

// No detection at all leaves the mask head an empty batch (LibTorch 1.13 fails to convolve
// one with NHWC weights).
TEST(ChannelsLast, AnImageWithoutDetectionsIsNoError) {
  MaskRcnnOptions options = small_options();
  options.compute.channels_last = true;
  options.roi_heads.score_thresh = 1.0;  // no score exceeds it
  torch::manual_seed(3);
  MaskRcnn model(options);
  model->eval();
  torch::NoGradGuard no_grad;
  const std::vector<Detections> found = model->detect({square_scene(90, 120, 30, 20, 40).first});
  EXPECT_EQ(found.at(0).boxes.size(0), 0);
  EXPECT_EQ(found.at(0).masks.size(0), 0);
}

}  // namespace
}  // namespace dtrain::vision::modeling
