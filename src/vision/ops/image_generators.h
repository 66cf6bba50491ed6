#pragma once

// Where each image's random draws come from in a training step (the anchor
// and proposal samples). Either one generator for all images in turn, which
// is torchvision's order and what a seeded torch.manual_seed reproduces, or
// one generator per image: then an image's samples do not depend on which
// other images share its batch or its rank, so a data-parallel step over R
// ranks draws exactly what one rank with the whole batch would.
#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace dtrain::vision::ops {

class ImageGenerators {
 public:
  // Implicit on purpose: a plain generator is the common, torchvision case.
  ImageGenerators(at::Generator shared = {}) : shared_(std::move(shared)) {}  // NOLINT
  explicit ImageGenerators(std::vector<at::Generator> per_image) : per_image_(std::move(per_image)) {}

  // The generator of image `index` of the batch.
  at::Generator for_image(size_t index) const {
    if (per_image_.empty()) return shared_;
    TORCH_CHECK(index < per_image_.size(), "ImageGenerators: image ", index, " of a batch with generators for ",
                per_image_.size());
    return per_image_[index];
  }
  bool per_image() const { return !per_image_.empty(); }

 private:
  at::Generator shared_;
  std::vector<at::Generator> per_image_;
};

}  // namespace dtrain::vision::ops
