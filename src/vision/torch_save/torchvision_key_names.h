// Torchvision renamed some Mask R-CNN parameters in 0.13, when the FPN, RPN
// head and mask head convolutions became Conv2dNormActivation blocks (an
// nn.Sequential whose conv is element 0). Its modules rename the old keys on
// load when the checkpoint's module version is missing or below 2
// (FeaturePyramidNetwork, RPNHead and MaskRCNNHeads `_load_from_state_dict`);
// these helpers do the same for a flat state dict.
#pragma once

#include <string>

namespace dtrain::vision::torch_save {

// The torchvision >= 0.13 name of a Mask R-CNN state dict key:
//   backbone.fpn.inner_blocks.N.{weight,bias}    → backbone.fpn.inner_blocks.N.0.{weight,bias}
//   backbone.fpn.layer_blocks.N.{weight,bias}    → backbone.fpn.layer_blocks.N.0.{weight,bias}
//   rpn.head.conv.{weight,bias}                  → rpn.head.conv.0.0.{weight,bias}
//   roi_heads.mask_head.mask_fcnK.{weight,bias}  → roi_heads.mask_head.{K-1}.0.{weight,bias}  (K >= 1)
// Every other key, modern names included, comes back unchanged.
std::string modern_torchvision_key(const std::string& key);

// Keys a checkpoint may carry that a model need not have: BatchNorm2d's
// ".num_batches_tracked" counter, which torchvision's FrozenBatchNorm2d (the
// norm layer of the pretrained backbones) does not keep.
bool is_ignorable_extra_key(const std::string& key);

}  // namespace dtrain::vision::torch_save
