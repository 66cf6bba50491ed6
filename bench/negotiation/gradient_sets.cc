#include "bench/negotiation/gradient_sets.h"

#include <algorithm>
#include <numeric>

#include "bench/allreduce/resnet50_gradients.h"

namespace dtrain::bench {
namespace {

// Collects parameters in forward order; backward_order() reverses them.
class Parameters {
 public:
  void add(const std::string& name, std::int64_t elements) { forward_.push_back({name, elements}); }
  void conv(const std::string& name, std::int64_t in, std::int64_t out, std::int64_t k, bool bias) {
    add(name + ".weight", in * out * k * k);
    if (bias) add(name + ".bias", out);
  }
  void linear(const std::string& name, std::int64_t in, std::int64_t out) {
    add(name + ".weight", in * out);
    add(name + ".bias", out);
  }
  std::vector<Gradient> backward_order() const { return {forward_.rbegin(), forward_.rend()}; }

 private:
  std::vector<Gradient> forward_;
};

// The bottleneck stages of Detectron2's ResNet-50 (3, 4, 6, 3 blocks; FrozenBN, so their
// norms have no gradients); stages before `first_trained` (0-based) are frozen. Stage s is
// named res(s + 2).
void resnet50_stages(Parameters& p, int first_trained) {
  const int blocks[] = {3, 4, 6, 3};
  std::int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = 64 << stage, out = width * 4;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string block = "backbone.bottom_up.res" + std::to_string(stage + 2) + "." + std::to_string(b);
      if (stage >= first_trained) {
        p.conv(block + ".conv1", in, width, 1, false);
        p.conv(block + ".conv2", width, width, 3, false);
        p.conv(block + ".conv3", width, out, 1, false);
        if (b == 0) p.conv(block + ".shortcut", in, out, 1, false);
      }
      in = out;
    }
  }
}

}  // namespace

std::vector<Gradient> resnet50_gradients() {
  const std::vector<std::vector<std::int64_t>> shapes = resnet50_gradient_shapes();
  std::vector<Gradient> gradients;
  for (std::size_t k = shapes.size(); k-- > 0;) {
    gradients.push_back({"grad." + std::to_string(k),
                         std::accumulate(shapes[k].begin(), shapes[k].end(), std::int64_t{1}, std::multiplies<>())});
  }
  return gradients;
}

std::vector<Gradient> mask_rcnn_r50_fpn_gradients() {
  Parameters p;
  resnet50_stages(p, 1);  // res3..res5 train (FREEZE_AT 2)
  const std::int64_t channels[] = {256, 512, 1024, 2048};
  for (int level = 0; level < 4; ++level) {
    p.conv("backbone.fpn_lateral" + std::to_string(level + 2), channels[level], 256, 1, true);
    p.conv("backbone.fpn_output" + std::to_string(level + 2), 256, 256, 3, true);
  }
  p.conv("proposal_generator.rpn_head.conv", 256, 256, 3, true);
  p.conv("proposal_generator.rpn_head.objectness_logits", 256, 3, 1, true);
  p.conv("proposal_generator.rpn_head.anchor_deltas", 256, 12, 1, true);
  p.linear("roi_heads.box_head.fc1", 256 * 7 * 7, 1024);
  p.linear("roi_heads.box_head.fc2", 1024, 1024);
  p.linear("roi_heads.box_predictor.cls_score", 1024, 81);
  p.linear("roi_heads.box_predictor.bbox_pred", 1024, 80 * 4);
  for (int i = 1; i <= 4; ++i) p.conv("roi_heads.mask_head.mask_fcn" + std::to_string(i), 256, 256, 3, true);
  p.conv("roi_heads.mask_head.deconv", 256, 256, 2, true);
  p.conv("roi_heads.mask_head.predictor", 256, 80, 1, true);
  return p.backward_order();
}

}  // namespace dtrain::bench
