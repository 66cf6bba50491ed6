// The Mask R-CNN model on a CPU-sized configuration: what training and
// inference return, how bad targets are refused, and weights round trips.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "vision/modeling/mask_rcnn.h"
#include "tests/support/temp_dir.h"
#include "tests/vision/modeling/small_model.h"
#include "vision/modeling/model_weights.h"

namespace dtrain::vision::modeling {
namespace {

namespace fs = std::filesystem;

TEST(MaskRcnn, TrainingReturnsTheFiveFiniteLossesAndImagesWithoutObjectsTrainTheBackground) {
  torch::manual_seed(0);
  MaskRcnn model(small_options());
  model->train();
  auto [image, target] = square_scene(90, 120, 30, 20, 40);
  // Two images of different sizes, one with no objects at all.
  LossDict losses = model->losses({image, at::rand({3, 100, 80})}, {target, no_objects(100, 80)});
  ASSERT_EQ(losses.size(), 5u);
  at::Tensor total = at::zeros({});
  for (const auto& [name, value] : losses) {
    EXPECT_TRUE(std::isfinite(value.item<double>())) << name;
    total = total + value;
  }
  total.backward();
  for (const auto& item : model->named_parameters()) {
    if (item.value().grad().defined()) {
      EXPECT_TRUE(item.value().grad().isfinite().all().item<bool>()) << item.key();
    }
  }

  // A batch of only empty images still trains: the mask loss is a zero with a graph.
  LossDict empty = model->losses({at::rand({3, 64, 64})}, {no_objects(64, 64)});
  EXPECT_EQ(empty["loss_mask"].item<double>(), 0.0);
  EXPECT_EQ(empty["loss_box_reg"].item<double>(), 0.0);
  EXPECT_GT(empty["loss_classifier"].item<double>(), 0.0);
}

TEST(MaskRcnn, AFewStepsOfSgdFitOneScene) {
  torch::manual_seed(1);
  MaskRcnn model(small_options());
  model->train();
  auto [image, target] = square_scene(96, 96, 24, 30, 36);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  double first = 0, last = 0;
  for (int step = 0; step < 12; ++step) {
    LossDict losses = model->losses({image}, {target});
    at::Tensor total = losses["loss_classifier"] + losses["loss_box_reg"] + losses["loss_mask"] +
                       losses["loss_objectness"] + losses["loss_rpn_box_reg"];
    sgd.zero_grad();
    total.backward();
    sgd.step();
    (step == 0 ? first : last) = total.item<double>();
  }
  EXPECT_LT(last, 0.8 * first) << "loss went from " << first << " to " << last;
}

TEST(MaskRcnn, InferenceReturnsDetectionsAtEachImagesOwnSize) {
  torch::manual_seed(2);
  MaskRcnn model(small_options());
  model->eval();
  torch::NoGradGuard no_grad;
  const auto detections = model->detect({at::rand({3, 90, 120}), at::rand({3, 130, 70})});
  ASSERT_EQ(detections.size(), 2u);
  const int64_t sizes[2][2] = {{90, 120}, {130, 70}};
  for (int i = 0; i < 2; ++i) {
    const auto& d = detections[i];
    const int64_t n = d.boxes.size(0);
    EXPECT_LE(n, 100);
    EXPECT_EQ(d.scores.size(0), n);
    EXPECT_EQ(d.labels.size(0), n);
    ASSERT_EQ(d.masks.sizes(), (at::IntArrayRef{n, 1, sizes[i][0], sizes[i][1]}));
    if (n == 0) continue;
    EXPECT_GE(d.labels.min().item<int64_t>(), 1);
    EXPECT_LE(d.boxes.select(1, 2).max().item<float>(), sizes[i][1] + 1e-3);
    EXPECT_LE(d.boxes.select(1, 3).max().item<float>(), sizes[i][0] + 1e-3);
    // Scores come sorted, best first.
    EXPECT_TRUE(d.scores.equal(std::get<0>(d.scores.sort(0, true))));
  }
}

TEST(MaskRcnn, AnImageThinnerThanOnePixelAfterResizingStillGetsAnAnswer) {
  MaskRcnn model(small_options());
  model->eval();
  torch::NoGradGuard no_grad;
  // 600x3 shrinks to 128x0.64: kept at one pixel wide rather than failing.
  const auto detections = model->detect({at::rand({3, 600, 3})});
  EXPECT_EQ(detections[0].masks.size(2), 600);
  EXPECT_EQ(detections[0].masks.size(3), 3);
}

void expect_refused(MaskRcnn& model, DetectionTargets target, const at::Tensor& image, const std::string& needle) {
  try {
    model->losses({image}, {std::move(target)});
    ADD_FAILURE() << "expected an error mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("image 0"), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
}

TEST(MaskRcnn, BadTargetsAreRefusedNamingTheImageAndTheProblem) {
  MaskRcnn model(small_options());
  model->train();
  auto [image, good] = square_scene(64, 64, 10, 10, 20);
  DetectionTargets degenerate = good;
  degenerate.boxes = torch::tensor({{10.f, 10.f, 10.f, 30.f}});
  expect_refused(model, degenerate, image, "box 0 (10.000000, 10.000000, 10.000000, 30.000000)");
  DetectionTargets wrong_mask = good;
  wrong_mask.masks = at::zeros({1, 32, 32}, at::kByte);
  expect_refused(model, wrong_mask, image, "masks must be [1, 64, 64]");
  DetectionTargets bad_label = good;
  bad_label.labels = at::tensor({int64_t{4}});
  expect_refused(model, bad_label, image, "labels must be in 1..3");
  DetectionTargets nan_box = good;
  nan_box.boxes = torch::tensor({{10.f, NAN, 20.f, 30.f}});
  expect_refused(model, nan_box, image, "NaN");
}

class WeightsFiles : public ::testing::Test {
 protected:
  const dtrain::testing::TempDir temp_;
  const fs::path dir_ = temp_.path();
};

TEST_F(WeightsFiles, SavedWeightsLoadIntoAFreshModelWithIdenticalOutputs) {
  torch::manual_seed(3);
  MaskRcnn trained(small_options());
  const std::string path = (dir_ / "model.pth").string();
  save_weights(*trained, path);
  torch::manual_seed(4);
  MaskRcnn fresh(small_options());
  const WeightsReport report = load_weights(*fresh, path);
  EXPECT_TRUE(report.reinitialized.empty());
  EXPECT_FALSE(report.loaded.empty());
  trained->eval();
  fresh->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor image = at::rand({3, 80, 100});
  const auto a = trained->detect({image});
  const auto b = fresh->detect({image});
  EXPECT_TRUE(a[0].boxes.equal(b[0].boxes));
  EXPECT_TRUE(a[0].scores.equal(b[0].scores));
}

TEST_F(WeightsFiles, AnotherClassCountReinitialisesOnlyThePredictors) {
  MaskRcnn coco(small_options());
  const std::string path = (dir_ / "coco.pth").string();
  save_weights(*coco, path);
  MaskRcnnOptions options = small_options();
  options.roi_heads.num_classes = 7;
  MaskRcnn custom(options);
  const WeightsReport report = load_weights(*custom, path);
  std::vector<std::string> expected{
      "roi_heads.box_predictor.bbox_pred.bias",        "roi_heads.box_predictor.bbox_pred.weight",
      "roi_heads.box_predictor.cls_score.bias",        "roi_heads.box_predictor.cls_score.weight",
      "roi_heads.mask_predictor.mask_fcn_logits.bias", "roi_heads.mask_predictor.mask_fcn_logits.weight"};
  std::vector<std::string> got = report.reinitialized;
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
}

TEST_F(WeightsFiles, WeightsOfAnotherArchitectureAreRefusedNamingKeysAndShapes) {
  MaskRcnn r18(small_options());
  const std::string path = (dir_ / "r18.pth").string();
  save_weights(*r18, path);
  MaskRcnnOptions options = small_options();
  options.backbone.depth = 50;
  MaskRcnn r50(options);
  try {
    load_weights(*r50, path);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(
        message.find("shape mismatch: backbone.body.layer1.0.conv1.weight (file [64, 64, 3, 3], model [64, 64, 1, 1])"),
        std::string::npos)
        << message;
    EXPECT_NE(message.find("missing: backbone.body.layer1.0.bn3.bias"), std::string::npos) << message;
  }
}

TEST(MaskRcnn, TrainableLayersFreezeTheStemAndEarlyStages) {
  MaskRcnnOptions options = small_options();
  options.backbone.trainable_layers = 2;
  MaskRcnn model(options);
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    const bool trainable = name.rfind("backbone.body.", 0) != 0 || name.rfind("backbone.body.layer4", 0) == 0 ||
                           name.rfind("backbone.body.layer3", 0) == 0;
    EXPECT_EQ(item.value().requires_grad(), trainable) << name;
  }
}

}  // namespace
}  // namespace dtrain::vision::modeling
