// dtrain's Mask R-CNN against torchvision 0.14 on the same LibTorch: the
// reference script builds torchvision's model with random weights, saves
// them with torch.save, runs inference and one training forward/backward
// and saves the results; here the same weights are loaded through dtrain's
// checkpoint reader and everything is compared. On a GPU (TorchvisionParityOnCuda) both
// models run there and the detections are compared.
#include <ATen/Context.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "tests/support/temp_dir.h"
#include "vision/torch_save/torch_checkpoint.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"

namespace dtrain::vision::modeling {
namespace {

namespace fs = std::filesystem;

std::map<std::string, at::Tensor> load_map(const std::string& path) {
  std::map<std::string, at::Tensor> out;
  for (auto& entry : torch_save::load_state_dict(path)) out[entry.name] = entry.tensor;
  return out;
}

MaskRcnnOptions reference_options(int64_t depth, int64_t num_classes) {
  MaskRcnnOptions o;
  o.backbone.depth = depth;
  o.backbone.trainable_layers = 3;
  o.roi_heads.num_classes = num_classes;
  o.transform.min_size_train = {160};
  o.transform.min_size_test = 160;
  o.transform.max_size_train = 256;
  o.transform.max_size_test = 256;
  o.rpn.pre_nms_top_n_test = 300;
  o.rpn.post_nms_top_n_test = 200;
  o.rpn.pre_nms_top_n_train = 600;
  o.rpn.post_nms_top_n_train = 300;
  o.rpn.batch_size_per_image = 128;
  o.roi_heads.batch_size_per_image = 128;
  return o;
}

void expect_close(const at::Tensor& ours, const at::Tensor& theirs, double tolerance, const std::string& what) {
  ASSERT_EQ(ours.sizes(), theirs.sizes()) << what;
  if (ours.numel() == 0) return;
  const at::Tensor a = ours.to(at::kDouble), b = theirs.to(at::kDouble);
  const double err = ((a - b).abs() / (b.abs() + 1.0)).max().item<double>();
  EXPECT_LE(err, tolerance) << what << ": largest difference relative to (|torchvision| + 1) is " << err;
}

class TorchvisionParity : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override { write_reference("cpu"); }

  // torchvision's weights, inputs and outputs in dir_, its model run on `device`.
  void write_reference(const std::string& device) {
    if (std::system(DTRAIN_PYTHON " -c 'import torchvision' >/dev/null 2>&1") != 0) {
      GTEST_SKIP() << DTRAIN_PYTHON << " has no torchvision (scripts/setup installs python3-torchvision)";
    }
    const std::string command = DTRAIN_PYTHON " " DTRAIN_TORCHVISION_REFERENCE " " + dir_.string() + " " +
                                std::to_string(GetParam()) + " 91 " + device;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }

  const dtrain::testing::TempDir temp_;
  const fs::path dir_ = temp_.path();
};

void expect_detections(const std::vector<Detections>& detections, std::map<std::string, at::Tensor>& expected,
                       double tolerance) {
  for (int i = 0; i < 2; ++i) {
    const std::string p = "detections" + std::to_string(i) + "_";
    ASSERT_GT(expected[p + "boxes"].size(0), 0) << "the reference has no detections to compare";
    ASSERT_EQ(detections[i].labels.sizes(), expected[p + "labels"].sizes()) << p;
    EXPECT_TRUE(detections[i].labels.to(at::kCPU).equal(expected[p + "labels"])) << p << "labels";
    expect_close(detections[i].boxes.to(at::kCPU), expected[p + "boxes"], tolerance, p + "boxes");
    expect_close(detections[i].scores.to(at::kCPU), expected[p + "scores"], tolerance, p + "scores");
    expect_close(detections[i].masks.to(at::kCPU), expected[p + "masks"], tolerance, p + "masks");
  }
}

TEST_P(TorchvisionParity, InferenceAndTrainingMatchTorchvision) {
  at::set_num_threads(1);
  MaskRcnn model(reference_options(GetParam(), 91));
  const WeightsReport report = load_weights(*model, (dir_ / "weights.pth").string());
  EXPECT_TRUE(report.reinitialized.empty());

  // The same weights under the legacy key names load to the same state.
  MaskRcnn legacy(reference_options(GetParam(), 91));
  load_weights(*legacy, (dir_ / "weights_legacy.pth").string());
  const auto modern_state = model->named_parameters();
  for (const auto& item : legacy->named_parameters()) {
    EXPECT_TRUE(item.value().equal(modern_state[item.key()])) << item.key();
  }

  auto inputs = load_map((dir_ / "inputs.pth").string());
  auto expected = load_map((dir_ / "outputs.pth").string());
  std::vector<at::Tensor> images{inputs["image0"], inputs["image1"]};
  std::vector<DetectionTargets> targets;
  for (int i = 0; i < 2; ++i) {
    const std::string p = "target" + std::to_string(i) + "_";
    targets.push_back({inputs[p + "boxes"], inputs[p + "labels"], inputs[p + "masks"]});
  }

  model->eval();
  std::vector<Detections> detections;
  {
    torch::NoGradGuard no_grad;
    detections = model->detect(images);
  }
  expect_detections(detections, expected, 1e-4);

  model->train();
  torch::manual_seed(7);
  LossDict losses = model->losses(images, targets);
  for (const char* name : {"loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness", "loss_rpn_box_reg"}) {
    ASSERT_TRUE(losses.count(name)) << name;
    expect_close(losses[name].detach(), expected[name], 1e-4, name);
  }
  at::Tensor total = losses["loss_classifier"];
  for (const auto& [name, value] : losses) {
    if (name != "loss_classifier") total = total + value;
  }
  total.backward();
  std::map<std::string, at::Tensor> params;
  for (const auto& item : model->named_parameters()) params[item.key()] = item.value();
  for (const auto& [key, grad] : expected) {
    if (key.rfind("grad.", 0) != 0) continue;
    const std::string name = key.substr(5);
    ASSERT_TRUE(params.count(name)) << name;
    ASSERT_TRUE(params[name].grad().defined()) << name << " has no gradient";
    expect_close(params[name].grad(), grad, 1e-3, key);
  }
}

INSTANTIATE_TEST_SUITE_P(ResNetDepths, TorchvisionParity, ::testing::Values(18, 50),
                         [](const auto& info) { return "R" + std::to_string(info.param); });

// The same weights on a GPU, both models there (TF32 off on both sides): inference only, since
// torchvision's training samples come from the GPU's generator there. Skipped, saying why,
// without CUDA (scripts/gpu/test runs it against torchvision 0.26 on the GPU machine).
class TorchvisionParityOnCuda : public TorchvisionParity {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch sees no CUDA device (or has no CUDA)";
    write_reference("cuda");
  }
};

TEST_P(TorchvisionParityOnCuda, DetectionsMatchTorchvisionOnTheGpu) {
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
  const at::Device gpu(at::kCUDA, 0);
  MaskRcnn model(reference_options(GetParam(), 91));
  load_weights(*model, (dir_ / "weights.pth").string());
  model->to(gpu);
  auto inputs = load_map((dir_ / "inputs.pth").string());
  auto expected = load_map((dir_ / "outputs.pth").string());
  model->eval();
  torch::NoGradGuard no_grad;
  const std::vector<Detections> detections = model->detect({inputs["image0"].to(gpu), inputs["image1"].to(gpu)});
  ASSERT_TRUE(detections[0].boxes.is_cuda());
  expect_detections(detections, expected, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(ResNetDepths, TorchvisionParityOnCuda, ::testing::Values(18, 50),
                         [](const auto& info) { return "R" + std::to_string(info.param); });

}  // namespace
}  // namespace dtrain::vision::modeling
