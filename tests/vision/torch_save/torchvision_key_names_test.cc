// Legacy torchvision Mask R-CNN key names, by hand and against torchvision.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/support/command_runner.h"
#include "tests/vision/torch_save/python_torch.h"
#include "tests/support/temp_dir.h"
#include "vision/torch_save/torchvision_key_names.h"

namespace dtrain::vision::torch_save {
namespace {

TEST(TorchvisionKeyNames, LegacyNamesBecomeModern) {
  EXPECT_EQ(modern_torchvision_key("backbone.fpn.inner_blocks.0.weight"), "backbone.fpn.inner_blocks.0.0.weight");
  EXPECT_EQ(modern_torchvision_key("backbone.fpn.inner_blocks.3.bias"), "backbone.fpn.inner_blocks.3.0.bias");
  EXPECT_EQ(modern_torchvision_key("backbone.fpn.layer_blocks.2.weight"), "backbone.fpn.layer_blocks.2.0.weight");
  EXPECT_EQ(modern_torchvision_key("backbone.fpn.layer_blocks.10.bias"), "backbone.fpn.layer_blocks.10.0.bias");
  EXPECT_EQ(modern_torchvision_key("rpn.head.conv.weight"), "rpn.head.conv.0.0.weight");
  EXPECT_EQ(modern_torchvision_key("rpn.head.conv.bias"), "rpn.head.conv.0.0.bias");
  EXPECT_EQ(modern_torchvision_key("roi_heads.mask_head.mask_fcn1.weight"), "roi_heads.mask_head.0.0.weight");
  EXPECT_EQ(modern_torchvision_key("roi_heads.mask_head.mask_fcn4.bias"), "roi_heads.mask_head.3.0.bias");
  EXPECT_EQ(modern_torchvision_key("roi_heads.mask_head.mask_fcn12.weight"), "roi_heads.mask_head.11.0.weight");
}

TEST(TorchvisionKeyNames, ModernAndUnrelatedNamesPassUnchanged) {
  for (const std::string key : {
           "backbone.fpn.inner_blocks.0.0.weight",
           "backbone.fpn.layer_blocks.3.0.bias",
           "rpn.head.conv.0.0.weight",
           "rpn.head.cls_logits.weight",
           "roi_heads.mask_head.0.0.weight",
           "roi_heads.mask_predictor.mask_fcn_logits.weight",
           "roi_heads.mask_predictor.conv5_mask.bias",
           "backbone.body.layer1.0.bn1.running_mean",
           "backbone.fpn.inner_blocks.0.running_mean",  // not a conv tensor
           "backbone.fpn.inner_blocks.x.weight",        // not an index
           "backbone.fpn.inner_blocks.01.weight",       // not how torchvision writes one
           "roi_heads.mask_head.mask_fcn0.weight",      // the first block is mask_fcn1
           "roi_heads.mask_head.mask_fcn.weight",
           "rpn.head.conv.weight.extra",
           "",
       }) {
    EXPECT_EQ(modern_torchvision_key(key), key);
  }
}

TEST(TorchvisionKeyNames, OnlyBatchNormCountersAreIgnorable) {
  EXPECT_TRUE(is_ignorable_extra_key("backbone.body.bn1.num_batches_tracked"));
  EXPECT_TRUE(is_ignorable_extra_key("backbone.body.layer1.0.bn2.num_batches_tracked"));
  EXPECT_FALSE(is_ignorable_extra_key("backbone.body.bn1.running_mean"));
  EXPECT_FALSE(is_ignorable_extra_key("num_batches_tracked"));
  EXPECT_FALSE(is_ignorable_extra_key("backbone.body.bn1.num_batches_tracked.x"));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// torchvision itself loads the legacy names (its version hooks rename them);
// the helper must map every one to the key the model has.
TEST(TorchvisionKeyNames, AgreesWithTorchvisionOnMaskRcnnResnet50Fpn) {
  dtrain::testing::TempDir dir;
  const auto made = testing::run_python(TORCHVISION_LEGACY_KEYS_PY, testing::quoted(dir.path().string()));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const auto modern = lines_of(dtrain::testing::read_file(dir / "modern_keys.txt"));
  const auto legacy = lines_of(dtrain::testing::read_file(dir / "legacy_keys.txt"));
  ASSERT_EQ(modern.size(), legacy.size());
  ASSERT_FALSE(modern.empty());
  std::size_t renamed = 0;
  for (std::size_t i = 0; i < modern.size(); ++i) {
    EXPECT_EQ(modern_torchvision_key(legacy[i]), modern[i]);
    EXPECT_EQ(modern_torchvision_key(modern[i]), modern[i]);
    renamed += legacy[i] != modern[i];
  }
  // 4 FPN levels x 2 block kinds x 2 tensors, the RPN conv's 2, the mask
  // head's 4 convs x 2.
  EXPECT_EQ(renamed, 16u + 2u + 8u);
}

}  // namespace
}  // namespace dtrain::vision::torch_save
