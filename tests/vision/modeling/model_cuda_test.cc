// The whole Mask R-CNN on CUDA against the same model on the CPU: the same weights and
// images, the same random samples (the samplers draw from CPU generators on either device):
// losses, every gradient after one backward pass, and detections. float64 leaves no room for
// rounding to reorder proposals, so it must agree to 1e-9; float32 (TF32 off: it would round
// convolutions to 10 bits) within 1e-3, the bound. Skipped, saying why, unless
// LibTorch has CUDA and a GPU (scripts/gpu/test runs it on the GPU machine).
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <ostream>
#include <string>
#include <utility>

#include "tests/vision/modeling/small_model.h"

namespace dtrain::vision::modeling {
namespace {

const at::Device kGpu(at::kCUDA, 0);

struct Precision {
  at::ScalarType type;
  double tolerance;  // on |a - b| / (|b| + 1)
};

void PrintTo(const Precision& p, std::ostream* os) { *os << c10::toString(p.type) << " within " << p.tolerance; }

class ModelOnCuda : public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device (or has no CUDA)";
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
  }

  // Two copies of one model, on the CPU and on the GPU, in the parameter's type.
  std::pair<MaskRcnn, MaskRcnn> models() const {
    torch::manual_seed(5);
    MaskRcnn cpu(small_options());
    cpu->to(GetParam().type);
    torch::manual_seed(5);
    MaskRcnn gpu(small_options());
    gpu->to(GetParam().type);
    gpu->to(kGpu);
    return {cpu, gpu};
  }

  void expect_close(const at::Tensor& gpu, const at::Tensor& cpu, const std::string& what) const {
    ASSERT_TRUE(gpu.is_cuda()) << what << " left the GPU";
    ASSERT_EQ(gpu.sizes(), cpu.sizes()) << what;
    if (cpu.numel() == 0) return;
    const at::Tensor a = gpu.to(at::kCPU).to(at::kDouble), b = cpu.to(at::kDouble);
    const double err = ((a - b).abs() / (b.abs() + 1.0)).max().item<double>();
    EXPECT_LE(err, GetParam().tolerance) << what << ": largest difference relative to (|cpu| + 1) is " << err;
  }
};

TEST_P(ModelOnCuda, TrainingLossesAndGradientsMatchTheCpu) {
  auto [cpu, gpu] = models();
  auto [image, target] = square_scene(90, 120, 30, 20, 40);
  auto [image2, target2] = square_scene(100, 80, 10, 50, 30);
  const at::ScalarType type = GetParam().type;
  cpu->train();
  gpu->train();
  const LossDict on_cpu =
      cpu->losses({image.to(type), image2.to(type)}, {target, target2}, at::make_generator<at::CPUGeneratorImpl>(17));
  const auto to_gpu = [](DetectionTargets t) {
    return DetectionTargets{t.boxes.to(kGpu), t.labels.to(kGpu), t.masks.to(kGpu)};
  };
  // One image's targets on the GPU, the other's on the host (as the trainer hands them over).
  const LossDict on_gpu = gpu->losses({image.to(type).to(kGpu), image2.to(type).to(kGpu)}, {to_gpu(target), target2},
                                      at::make_generator<at::CPUGeneratorImpl>(17));
  ASSERT_EQ(on_gpu.size(), on_cpu.size());
  at::Tensor total_cpu = at::zeros({}, on_cpu.begin()->second.options());
  at::Tensor total_gpu = at::zeros({}, on_gpu.begin()->second.options());
  for (const auto& [name, value] : on_cpu) {
    expect_close(on_gpu.at(name), value, name);
    total_cpu = total_cpu + value;
    total_gpu = total_gpu + on_gpu.at(name);
  }
  total_cpu.backward();
  total_gpu.backward();
  const auto gpu_parameters = gpu->named_parameters();
  size_t compared = 0;
  for (const auto& item : cpu->named_parameters()) {
    const at::Tensor& grad = item.value().grad();
    if (!grad.defined()) continue;
    ASSERT_TRUE(gpu_parameters[item.key()].grad().defined()) << item.key() << " has no gradient on the GPU";
    expect_close(gpu_parameters[item.key()].grad(), grad, "gradient of " + item.key());
    ++compared;
  }
  EXPECT_GT(compared, 20u);
}

TEST_P(ModelOnCuda, DetectionsMatchTheCpu) {
  auto [cpu, gpu] = models();
  cpu->eval();
  gpu->eval();
  torch::NoGradGuard no_grad;
  auto [image, target] = square_scene(90, 120, 30, 20, 40);
  const at::ScalarType type = GetParam().type;
  const Detections on_cpu = cpu->detect({image.to(type)}).at(0);
  const Detections on_gpu = gpu->detect({image.to(type).to(kGpu)}).at(0);
  ASSERT_GT(on_cpu.boxes.size(0), 0) << "score threshold 0 keeps detections";
  expect_close(on_gpu.boxes, on_cpu.boxes, "boxes");
  expect_close(on_gpu.scores, on_cpu.scores, "scores");
  EXPECT_TRUE(on_gpu.labels.to(at::kCPU).equal(on_cpu.labels));
  expect_close(on_gpu.masks, on_cpu.masks, "masks");
}

INSTANTIATE_TEST_SUITE_P(Types, ModelOnCuda,
                         ::testing::Values(Precision{at::kDouble, 1e-9}, Precision{at::kFloat, 1e-3}),
                         [](const ::testing::TestParamInfo<Precision>& info) {
                           return std::string(info.param.type == at::kDouble ? "Float64" : "Float32");
                         });

}  // namespace
}  // namespace dtrain::vision::modeling
