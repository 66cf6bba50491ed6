#pragma once

// The gradients a data-parallel step allreduces, as a training framework submits them to the
// runtime (one named tensor per trainable parameter, in the order backward produces them: the
// last layer first). Shapes follow the published architectures, so tensor counts and sizes
// are the real ones without building the models.
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::bench {

struct Gradient {
  std::string name;
  std::int64_t elements;
};

// torchvision's resnet50 (bench/allreduce/resnet50_gradients.h): 161 tensors, 25,557,032
// parameters, named grad.<k> as the allreduce benchmarks name them.
std::vector<Gradient> resnet50_gradients();

// Detectron2's Mask R-CNN R50-FPN as trained on COCO (stem and res2 frozen, FrozenBN: the
// convolutions of res3-res5 without their norms, the FPN, RPN, box and mask heads, 81 classes):
// 84 tensors, about 44 million parameters.
std::vector<Gradient> mask_rcnn_r50_fpn_gradients();

}  // namespace dtrain::bench
