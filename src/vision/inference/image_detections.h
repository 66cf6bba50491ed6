#pragma once

// One image's detections as plain values, copied out of the model's tensors
// once, so that writing results and drawing them need no LibTorch (and the
// files that do so compile in seconds).
#include <array>
#include <cstdint>
#include <vector>

namespace dtrain::vision::inference {

struct DetectedInstance {
  std::array<float, 4> box{};  // x1, y1, x2, y2 in the image's pixels
  int64_t label = 0;           // the model's class index (a COCO category id for COCO models)
  float score = 0.0f;
  // Row-major height x width, 1 where the mask probability is above 0.5;
  // empty when the model has no mask head (MODEL.MASK_ON false).
  std::vector<uint8_t> mask;
};

struct ImageDetections {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<DetectedInstance> instances;  // by descending score, as the model returns them
};

}  // namespace dtrain::vision::inference
