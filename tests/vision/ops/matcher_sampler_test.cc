// The proposal matcher's thresholds and low-quality rule, and the balanced
// sampler's counts and reproducibility, on hand-computed cases.
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vision/ops/balanced_sampler.h"
#include "vision/ops/matcher.h"

namespace dtrain::vision::ops {
namespace {

at::Tensor quality(std::vector<float> values, int64_t g, int64_t p) {
  return at::tensor(values, at::kFloat).view({g, p});
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

TEST(Matcher, ThresholdsSplitMatchesBetweenAndBelow) {
  const Matcher matcher(0.7, 0.3, /*allow_low_quality_matches=*/false);
  // Best gt per prediction: 0.9 (gt 0), 0.6 (gt 1), 0.25 (gt 1), 0.8 (gt 1).
  const at::Tensor q = quality({0.9f, 0.5f, 0.1f, 0.2f,  //
                                0.2f, 0.6f, 0.25f, 0.8f},
                               2, 4);
  const at::Tensor m = matcher.match(q);
  EXPECT_EQ(m.scalar_type(), at::kLong);
  EXPECT_EQ(to_vector(m), (std::vector<int64_t>{0, Matcher::kBetweenThresholds, Matcher::kBelowLowThreshold, 1}));
  EXPECT_EQ(Matcher::kBelowLowThreshold, -1);
  EXPECT_EQ(Matcher::kBetweenThresholds, -2);
}

TEST(Matcher, ThresholdsAreInclusiveLowerBounds) {
  // quality == low is "between", quality == high is a match.
  const Matcher matcher(0.5, 0.25, false);
  const at::Tensor m = matcher.match(quality({0.25f, 0.5f, 0.2f}, 1, 3));
  EXPECT_EQ(to_vector(m), (std::vector<int64_t>{-2, 0, -1}));
}

TEST(Matcher, LowQualityMatchesKeepEveryTiedBestPrediction) {
  // Every quality is between the thresholds; gt 0's best (0.4) is reached by
  // predictions 0 and 1, gt 1's best (0.5) by prediction 2.
  const at::Tensor q = quality({0.4f, 0.4f, 0.1f,  //
                                0.2f, 0.1f, 0.5f},
                               2, 3);
  EXPECT_EQ(to_vector(Matcher(0.7, 0.3, false).match(q)), (std::vector<int64_t>{-2, -2, -2}));
  EXPECT_EQ(to_vector(Matcher(0.7, 0.3, true).match(q)), (std::vector<int64_t>{0, 0, 1}));
}

TEST(Matcher, LowQualityMatchRestoresTheArgmaxNotTheGtItIsBestFor) {
  // Prediction 0 is gt 1's best (0.15) but overlaps gt 0 more (0.2): it keeps
  // gt 0, as torchvision does. Prediction 1 is nobody's best: stays below.
  const at::Tensor q = quality({0.2f, 0.1f,  //
                                0.15f, 0.05f},
                               2, 2);
  EXPECT_EQ(to_vector(Matcher(0.7, 0.3, true).match(q)), (std::vector<int64_t>{0, -1}));
}

TEST(Matcher, EmptyGroundTruthOrPredictionsIsAnError) {
  const Matcher matcher(0.7, 0.3, true);
  try {
    matcher.match(at::zeros({0, 5}));
    FAIL() << "expected an error for an image without ground truth";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no ground-truth boxes available"), std::string::npos);
  }
  EXPECT_THROW(matcher.match(at::zeros({3, 0})), c10::Error);
  EXPECT_THROW(matcher.match(at::zeros({3})), c10::Error);
  EXPECT_THROW(Matcher(0.3, 0.7, false), c10::Error);
}

at::Generator seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// positives at 0, 1, 2, 9 (labels 1 and 2), negatives at 3..7, ignored at 8.
at::Tensor labels() { return at::tensor(std::vector<int64_t>{1, 1, 1, 0, 0, 0, 0, 0, -1, 2}); }

TEST(BalancedSampler, CountsFollowBatchAndFraction) {
  {
    const BalancedPositiveNegativeSampler sampler(4, 0.5);
    const SampledMasks s = sampler.sample({labels()}, seeded(1));
    ASSERT_EQ(s.positive.size(), 1u);
    ASSERT_EQ(s.negative.size(), 1u);
    EXPECT_EQ(s.positive[0].scalar_type(), at::kByte);
    EXPECT_EQ(s.positive[0].sizes(), labels().sizes());
    EXPECT_EQ(s.positive[0].sum().item<int64_t>(), 2);  // min(4, int(4 * 0.5))
    EXPECT_EQ(s.negative[0].sum().item<int64_t>(), 2);  // min(5, 4 - 2)
  }
  {
    // int(10 * 0.25) = 2 positives; min(5, 8) = 5 negatives (all of them).
    const SampledMasks s = BalancedPositiveNegativeSampler(10, 0.25).sample({labels()}, seeded(1));
    EXPECT_EQ(s.positive[0].sum().item<int64_t>(), 2);
    EXPECT_EQ(to_vector(s.negative[0]), (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 1, 1, 0, 0}));
  }
  {
    // Few positives: all 4 taken, negatives fill to the batch, capped at 5.
    const SampledMasks s = BalancedPositiveNegativeSampler(8, 0.75).sample({labels()}, seeded(1));
    EXPECT_EQ(to_vector(s.positive[0]), (std::vector<int64_t>{1, 1, 1, 0, 0, 0, 0, 0, 0, 1}));
    EXPECT_EQ(s.negative[0].sum().item<int64_t>(), 4);
  }
}

TEST(BalancedSampler, ChoosesOnlyFromTheRightClassAndNeverIgnored) {
  const SampledMasks s = BalancedPositiveNegativeSampler(6, 0.5).sample({labels()}, seeded(7));
  const at::Tensor l = labels();
  EXPECT_TRUE(at::all(l.masked_select(s.positive[0].to(at::kBool)) >= 1).item<bool>());
  EXPECT_TRUE(at::all(l.masked_select(s.negative[0].to(at::kBool)) == 0).item<bool>());
  EXPECT_EQ(s.positive[0][8].item<int64_t>() + s.negative[0][8].item<int64_t>(), 0);
}

TEST(BalancedSampler, PerImageGeneratorsMakeAnImagesSampleIndependentOfItsBatch) {
  // What data-parallel equivalence rests on: image B sampled second in a
  // batch or alone (on another rank) with its own generator picks the same.
  const BalancedPositiveNegativeSampler sampler(4, 0.5);
  const at::Tensor a = labels(), b = labels().flip(0);
  const SampledMasks together = sampler.sample({a, b}, ImageGenerators({seeded(5), seeded(6)}));
  const SampledMasks alone = sampler.sample({b}, ImageGenerators({seeded(6)}));
  EXPECT_TRUE(at::equal(together.positive[1], alone.positive[0]));
  EXPECT_TRUE(at::equal(together.negative[1], alone.negative[0]));
  // One generator per image is required when they are given per image.
  EXPECT_THROW(sampler.sample({a, b}, ImageGenerators(std::vector<at::Generator>{seeded(5)})), c10::Error);
}

TEST(BalancedSampler, SeededGeneratorIsReproducibleAndDrawsPositivesFirst) {
  const BalancedPositiveNegativeSampler sampler(4, 0.5);
  const std::vector<at::Tensor> batch = {labels(), labels().flip(0)};
  const SampledMasks a = sampler.sample(batch, seeded(123));
  const SampledMasks b = sampler.sample(batch, seeded(123));
  ASSERT_EQ(a.positive.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(at::equal(a.positive[i], b.positive[i]));
    EXPECT_TRUE(at::equal(a.negative[i], b.negative[i]));
  }
  // The first image's choice is positives[randperm(4)[:2]] then
  // negatives[randperm(5)[:2]], drawn in that order from the generator.
  at::Generator g = seeded(123);
  const at::Tensor perm_pos = at::randperm(4, g, at::kLong).slice(0, 0, 2);
  const at::Tensor perm_neg = at::randperm(5, g, at::kLong).slice(0, 0, 2);
  const at::Tensor positives = at::tensor(std::vector<int64_t>{0, 1, 2, 9});
  const at::Tensor negatives = at::tensor(std::vector<int64_t>{3, 4, 5, 6, 7});
  const at::Tensor chosen_pos = positives.index_select(0, perm_pos);
  const at::Tensor chosen_neg = negatives.index_select(0, perm_neg);
  EXPECT_TRUE(at::equal(at::nonzero(a.positive[0]).view(-1), std::get<0>(chosen_pos.sort())));
  EXPECT_TRUE(at::equal(at::nonzero(a.negative[0]).view(-1), std::get<0>(chosen_neg.sort())));
}

TEST(BalancedSampler, EmptyImageGivesEmptyMasks) {
  const SampledMasks s = BalancedPositiveNegativeSampler(4, 0.5).sample({at::empty({0}, at::kLong)}, seeded(1));
  EXPECT_EQ(s.positive[0].numel(), 0);
  EXPECT_EQ(s.negative[0].numel(), 0);
}

}  // namespace
}  // namespace dtrain::vision::ops
