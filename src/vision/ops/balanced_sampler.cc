#include "vision/ops/balanced_sampler.h"

#include <algorithm>

namespace dtrain::vision::ops {

BalancedPositiveNegativeSampler::BalancedPositiveNegativeSampler(int64_t batch_size_per_image, double positive_fraction)
    : batch_size_per_image_(batch_size_per_image), positive_fraction_(positive_fraction) {
  TORCH_CHECK(batch_size_per_image >= 0, "BalancedPositiveNegativeSampler: batch_size_per_image ", "must be >= 0, got ",
              batch_size_per_image);
  TORCH_CHECK(positive_fraction >= 0.0 && positive_fraction <= 1.0,
              "BalancedPositiveNegativeSampler: positive_fraction must be in [0, 1], got ", positive_fraction);
}

SampledMasks BalancedPositiveNegativeSampler::sample(const std::vector<at::Tensor>& matched_idxs,
                                                     const ImageGenerators& generators) const {
  SampledMasks out;
  out.positive.reserve(matched_idxs.size());
  out.negative.reserve(matched_idxs.size());
  for (size_t i = 0; i < matched_idxs.size(); ++i) {
    const at::Tensor& labels = matched_idxs[i];
    TORCH_CHECK(labels.dim() == 1, "BalancedPositiveNegativeSampler: matched_idxs[", i, "] must be 1-D, got ",
                labels.sizes());
    const at::Tensor positive = at::nonzero(labels >= 1).view(-1);
    const at::Tensor negative = at::nonzero(labels == 0).view(-1);

    // int() of the product truncates, as in Python.
    const auto wanted_pos = static_cast<int64_t>(static_cast<double>(batch_size_per_image_) * positive_fraction_);
    const int64_t num_pos = std::min(positive.numel(), wanted_pos);
    const int64_t num_neg = std::min(negative.numel(), batch_size_per_image_ - num_pos);

    // The permutations come from the image's CPU generator wherever the labels are, so a
    // GPU run draws the same samples as a CPU run with the same seed.
    const at::Generator generator = generators.for_image(i);
    const at::TensorOptions on_cpu = at::TensorOptions().dtype(at::kLong);
    const at::Tensor perm_pos =
        at::randperm(positive.numel(), generator, on_cpu).slice(0, 0, num_pos).to(labels.device());
    const at::Tensor perm_neg =
        at::randperm(negative.numel(), generator, on_cpu).slice(0, 0, num_neg).to(labels.device());

    at::Tensor pos_mask = at::zeros_like(labels, labels.options().dtype(at::kByte));
    at::Tensor neg_mask = at::zeros_like(labels, labels.options().dtype(at::kByte));
    pos_mask.index_fill_(0, positive.index_select(0, perm_pos), 1);
    neg_mask.index_fill_(0, negative.index_select(0, perm_neg), 1);
    out.positive.push_back(pos_mask);
    out.negative.push_back(neg_mask);
  }
  return out;
}

}  // namespace dtrain::vision::ops
