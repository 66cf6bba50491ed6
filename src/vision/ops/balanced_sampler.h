// Picks the training examples of each image for the RPN and box heads with
// torchvision's BalancedPositiveNegativeSampler rules: at most
// int(batch_size_per_image * positive_fraction) positives, the rest of the
// batch filled with negatives, each chosen uniformly at random.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "vision/ops/image_generators.h"

namespace dtrain::vision::ops {

struct SampledMasks {
  // One uint8 mask per image, shaped like its matched_idxs: 1 where chosen.
  std::vector<at::Tensor> positive;
  std::vector<at::Tensor> negative;
};

class BalancedPositiveNegativeSampler {
 public:
  BalancedPositiveNegativeSampler(int64_t batch_size_per_image, double positive_fraction);

  // matched_idxs: one 1-D integer tensor per image whose values are labels:
  // >= 1 positive, 0 negative, -1 (or any other negative value) ignored.
  // num_pos = min(#positives, int(batch * fraction)),
  // num_neg = min(#negatives, batch - num_pos); the choice draws
  // at::randperm from image i's generator (positives first, then negatives,
  // image after image), so seeded generators make it reproducible.
  SampledMasks sample(const std::vector<at::Tensor>& matched_idxs, const ImageGenerators& generators) const;

  int64_t batch_size_per_image() const { return batch_size_per_image_; }
  double positive_fraction() const { return positive_fraction_; }

 private:
  int64_t batch_size_per_image_;
  double positive_fraction_;
};

}  // namespace dtrain::vision::ops
