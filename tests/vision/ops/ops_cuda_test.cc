// The CUDA RoIAlign and NMS against the CPU operators on the same inputs: random rois and
// adversarial ones (outside the image, zero area, tiny and huge, both alignments, fixed and
// adaptive sampling), boxes with tied scores, zero areas and far outside the image. Skipped,
// saying why, unless LibTorch has CUDA and a GPU (scripts/gpu/test runs it on the GPU machine).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "vision/ops/anchor_generator.h"
#include "vision/ops/balanced_sampler.h"
#include "vision/ops/box_coder.h"
#include "vision/ops/box_ops.h"
#include "vision/ops/matcher.h"
#include "vision/ops/multiscale_roi_align.h"
#include "vision/ops/nms.h"
#include "vision/ops/paste_masks.h"
#include "vision/ops/roi_align.h"

namespace dtrain::vision::ops {
namespace {

#define REQUIRE_CUDA() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device (or has no CUDA)";

const at::Device kGpu(at::kCUDA, 0);

// Rois over a 2-image batch of 20x24 features at spatial scale 0.5 (image 40x48): random ones,
// then edge cases.
at::Tensor test_rois(at::ScalarType type) {
  torch::manual_seed(11);
  const int64_t random = 200;
  at::Tensor xy = torch::rand({random, 2}, type) * 60 - 10;  // some start outside the image
  at::Tensor wh = torch::rand({random, 2}, type) * 40;
  at::Tensor batch = torch::randint(0, 2, {random, 1}).to(type);
  at::Tensor rois = torch::cat({batch, xy, xy + wh}, 1);
  const std::vector<std::vector<double>> edges = {
      {0, 10, 10, 10, 10},        // zero area
      {1, -30, -30, -20, -20},    // entirely outside, above and left
      {0, 100, 100, 120, 130},    // entirely outside, below and right
      {1, 0, 0, 48, 40},          // the whole image
      {0, 5.25, 7.75, 5.5, 8.0},  // a fraction of a pixel
      {1, -100, -100, 400, 400},  // far larger than the image
  };
  for (const auto& e : edges) rois = torch::cat({rois, torch::tensor(e, type).view({1, 5})});
  return rois;
}

void expect_close(const at::Tensor& cuda, const at::Tensor& cpu, double tolerance, const std::string& what) {
  ASSERT_EQ(cuda.sizes(), cpu.sizes()) << what;
  const double scale = std::max(1.0, cpu.abs().max().item<double>());
  const double difference = (cuda.to(at::kCPU) - cpu).abs().max().item<double>();
  EXPECT_LE(difference, tolerance * scale) << what << ": largest difference " << difference;
}

TEST(CudaRoiAlign, ForwardAndBackwardMatchTheCpuOperator) {
  REQUIRE_CUDA();
  for (at::ScalarType type : {at::kFloat, at::kDouble}) {
    const double tolerance = type == at::kFloat ? 1e-5 : 1e-12;
    torch::manual_seed(5);
    const at::Tensor features = torch::randn({2, 3, 20, 24}, type);
    const at::Tensor rois = test_rois(type);
    for (bool aligned : {false, true}) {
      for (int64_t sampling : {0, 2}) {
        const std::string what = std::string(c10::toString(type)) + (aligned ? " aligned" : " legacy") + " sampling " +
                                 std::to_string(sampling);
        const at::Tensor cpu = roi_align_forward(features, rois, 0.5, 7, 7, sampling, aligned);
        const at::Tensor gpu = roi_align_forward(features.to(kGpu), rois.to(kGpu), 0.5, 7, 7, sampling, aligned);
        expect_close(gpu, cpu, tolerance, "forward " + what);
        const at::Tensor grad = torch::randn(cpu.sizes(), type);
        const at::Tensor cpu_back = roi_align_backward(grad, rois, 0.5, 7, 7, 2, 3, 20, 24, sampling, aligned);
        const at::Tensor gpu_back =
            roi_align_backward(grad.to(kGpu), rois.to(kGpu), 0.5, 7, 7, 2, 3, 20, 24, sampling, aligned);
        expect_close(gpu_back, cpu_back, tolerance, "backward " + what);
      }
    }
  }
}

TEST(CudaRoiAlign, AutogradReachesTheFeaturesOnTheGpu) {
  REQUIRE_CUDA();
  const at::Tensor features = torch::randn({1, 4, 16, 16}).to(kGpu).requires_grad_(true);
  const at::Tensor rois = torch::tensor({0.0, 1.0, 2.0, 9.0, 12.0}).view({1, 5}).to(at::kFloat).to(kGpu);
  roi_align(features, rois, 1.0, 5, 5, 2, true).sum().backward();
  ASSERT_TRUE(features.grad().is_cuda());
  EXPECT_GT(features.grad().abs().sum().item<float>(), 0.0f);
}

// Boxes for NMS: random clusters (so many overlap), then ties and degenerate boxes.
std::pair<at::Tensor, at::Tensor> test_boxes(at::ScalarType type, int64_t n) {
  torch::manual_seed(17);
  at::Tensor centres = torch::randint(0, 8, {n, 2}).to(type) * 40 + torch::randn({n, 2}, type) * 6;
  at::Tensor sizes = torch::rand({n, 2}, type) * 50 + 1;
  at::Tensor boxes = torch::cat({centres - sizes / 2, centres + sizes / 2}, 1);
  at::Tensor scores = torch::rand({n}, type);
  scores.slice(0, 0, n / 4) = 0.5;                                                // a quarter tied
  boxes.slice(0, 0, 8) = torch::tensor({30.0, 30.0, 30.0, 30.0}, type);           // zero area, coincident
  boxes.slice(0, 8, 12) = torch::tensor({-500.0, -500.0, -400.0, -450.0}, type);  // far outside
  return {boxes, scores};
}

TEST(CudaNms, KeepsExactlyWhatTheCpuOperatorKeeps) {
  REQUIRE_CUDA();
  for (at::ScalarType type : {at::kFloat, at::kDouble}) {
    for (int64_t n : {1, 63, 64, 65, 1000, 5000}) {
      const auto [boxes, scores] = test_boxes(type, n);
      for (double threshold : {0.3, 0.5, 0.7}) {
        const at::Tensor cpu = nms(boxes, scores, threshold);
        const at::Tensor gpu = nms(boxes.to(kGpu), scores.to(kGpu), threshold);
        ASSERT_TRUE(gpu.is_cuda());
        EXPECT_TRUE(torch::equal(gpu.to(at::kCPU), cpu))
            << c10::toString(type) << " n=" << n << " threshold " << threshold << ": " << gpu.size(0)
            << " kept on the GPU, " << cpu.size(0) << " on the CPU";
      }
    }
  }
}

TEST(CudaNms, BatchedNmsKeepsCategoriesApartLikeTheCpu) {
  REQUIRE_CUDA();
  // 500: the coordinate-offset path on both; 6,000: one NMS per category on the CPU, the offset
  // path on the GPU; 26,000: one NMS per category on both (over kPerCategoryNmsAboveOnCuda).
  for (int64_t n : {500, 6000, 26000}) {
    const auto [boxes, scores] = test_boxes(at::kFloat, n);
    const at::Tensor categories = torch::randint(0, 5, {n});
    const at::Tensor cpu = batched_nms(boxes, scores, categories, 0.5);
    const at::Tensor gpu = batched_nms(boxes.to(kGpu), scores.to(kGpu), categories.to(kGpu), 0.5);
    EXPECT_TRUE(torch::equal(std::get<0>(gpu.to(at::kCPU).sort()), std::get<0>(cpu.sort()))) << "n=" << n;
  }
}

// The tensor-op operators (no kernels of dtrain's own) keep to their inputs' device: anchors,
// box coding, IoU and matching, sampling, multi-scale RoIAlign and mask pasting give on the
// GPU what they give on the CPU.
TEST(CudaOps, TheOtherDetectionOperatorsRunOnTheInputsDevice) {
  REQUIRE_CUDA();
  const AnchorGenerator anchors({{32}, {64}}, {{0.5, 1.0, 2.0}, {0.5, 1.0, 2.0}});
  const at::Tensor cpu_anchors = anchors.generate({64, 96}, {{16, 24}, {8, 12}}).all;
  const at::Tensor gpu_anchors = anchors.generate({64, 96}, {{16, 24}, {8, 12}}, at::kFloat, kGpu).all;
  ASSERT_TRUE(gpu_anchors.is_cuda());
  EXPECT_TRUE(torch::equal(gpu_anchors.to(at::kCPU), cpu_anchors));

  const auto [boxes, scores] = test_boxes(at::kFloat, 300);
  const at::Tensor proposals = boxes.slice(0, 100, 300);
  const at::Tensor gt = boxes.slice(0, 20, 40);  // past the degenerate boxes: their codes are infinite
  const BoxCoder coder({10, 10, 5, 5});
  expect_close(coder.encode(gt.repeat({10, 1}).to(kGpu), proposals.to(kGpu)),
               coder.encode(gt.repeat({10, 1}), proposals), 1e-5, "box encode");
  const at::Tensor codes = torch::randn({200, 4});
  expect_close(coder.decode(codes.to(kGpu), proposals.to(kGpu)), coder.decode(codes, proposals), 1e-5, "box decode");
  const at::Tensor iou = box_iou(gt, proposals);
  expect_close(box_iou(gt.to(kGpu), proposals.to(kGpu)), iou, 1e-6, "box iou");

  const Matcher matcher(0.5, 0.4, true);
  EXPECT_TRUE(torch::equal(matcher.match(iou.to(kGpu)).to(at::kCPU), matcher.match(iou)));

  const at::Tensor labels = matcher.match(iou).clamp_min(-1);
  const BalancedPositiveNegativeSampler sampler(64, 0.25);
  at::Generator cpu_generator = at::detail::createCPUGenerator(99);
  at::Generator gpu_run_generator = at::detail::createCPUGenerator(99);
  const SampledMasks on_cpu = sampler.sample({labels}, ImageGenerators(cpu_generator));
  const SampledMasks on_gpu = sampler.sample({labels.to(kGpu)}, ImageGenerators(gpu_run_generator));
  ASSERT_TRUE(on_gpu.positive[0].is_cuda());
  EXPECT_TRUE(torch::equal(on_gpu.positive[0].to(at::kCPU), on_cpu.positive[0]));
  EXPECT_TRUE(torch::equal(on_gpu.negative[0].to(at::kCPU), on_cpu.negative[0]));

  torch::manual_seed(23);
  std::vector<at::Tensor> features;
  for (int64_t size : {32, 16, 8, 4}) features.push_back(torch::randn({2, 8, size, size + 4}));
  std::vector<at::Tensor> gpu_features;
  for (const auto& f : features) gpu_features.push_back(f.to(kGpu));
  const std::vector<at::Tensor> per_image = {proposals.slice(0, 0, 120).clamp(0, 128),
                                             proposals.slice(0, 120, 200).clamp(0, 128)};
  const std::vector<std::array<int64_t, 2>> sizes = {{128, 140}, {120, 144}};
  MultiScaleRoIAlign cpu_pooler({7, 7}, 2), gpu_pooler({7, 7}, 2);
  expect_close(gpu_pooler.forward(gpu_features, {per_image[0].to(kGpu), per_image[1].to(kGpu)}, sizes),
               cpu_pooler.forward(features, per_image, sizes), 1e-5, "multi-scale roi align");

  const at::Tensor masks = torch::rand({30, 1, 28, 28});
  const at::Tensor mask_boxes = proposals.slice(0, 0, 30).clamp(-20, 150);
  expect_close(paste_masks_in_image(masks.to(kGpu), mask_boxes.to(kGpu), 120, 140, 1),
               paste_masks_in_image(masks, mask_boxes, 120, 140, 1), 1e-5, "paste masks");
}

}  // namespace
}  // namespace dtrain::vision::ops
