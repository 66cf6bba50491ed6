// RoIAlign forward values computed by hand, its edge rules, and its gradient
// checked against finite differences through the autograd wrapper.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "vision/ops/roi_align.h"

namespace dtrain::vision::ops {
namespace {

// value(y, x) = 4 * y + x on a 4x4 map. Bilinear interpolation of a linear
// function is exact, so a sample at (y, x) inside the map reads 4y + x.
at::Tensor ramp() { return at::arange(16, at::kFloat).view({1, 1, 4, 4}); }

at::Tensor roi(float batch, float x1, float y1, float x2, float y2) {
  return at::tensor(at::ArrayRef<float>({batch, x1, y1, x2, y2}), at::kFloat).view({1, 5});
}

float pooled_value(const at::Tensor& input, const at::Tensor& rois, int64_t sampling_ratio, bool aligned,
                   double spatial_scale = 1.0) {
  const at::Tensor out = roi_align_forward(input, rois, spatial_scale, 1, 1, sampling_ratio, aligned);
  EXPECT_EQ(out.sizes(), (at::IntArrayRef{rois.size(0), input.size(1), 1, 1}));
  return out.flatten()[0].item<float>();
}

TEST(RoiAlign, RoiCoveringPixelsAveragesSamples) {
  // Samples at x, y in {0.5, 1.5}: mean 4 * 1 + 1.
  EXPECT_FLOAT_EQ(pooled_value(ramp(), roi(0, 0, 0, 2, 2), 2, /*aligned=*/false), 5.0f);
}

TEST(RoiAlign, AlignedShiftsByHalfAPixel) {
  // The same roi shifted by -0.5: samples at {0, 1}, mean 4 * 0.5 + 0.5.
  const float unaligned = pooled_value(ramp(), roi(0, 0, 0, 2, 2), 2, false);
  const float aligned = pooled_value(ramp(), roi(0, 0, 0, 2, 2), 2, true);
  EXPECT_FLOAT_EQ(aligned, 2.5f);
  EXPECT_FLOAT_EQ(unaligned - aligned, 0.5f * 4 + 0.5f);
}

TEST(RoiAlign, PooledBinsSampleTheirOwnCells) {
  const at::Tensor out = roi_align_forward(ramp(), roi(0, 0, 0, 4, 4), 1.0, 2, 2, 1, false);
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{1, 1, 2, 2}));
  // One sample per bin, at (1, 1), (1, 3), (3, 1), (3, 3); x = 3 is the last column.
  const at::Tensor expected = at::tensor(at::ArrayRef<float>({5, 7, 13, 15})).view({1, 1, 2, 2});
  EXPECT_TRUE(at::allclose(out, expected));
  // Non-square pooling: 1 x 4 bins of width 1, samples at y = 1 and
  // x = 0.5 .. 3.5; x = 3.5 lies past the last column and reads column 3.
  const at::Tensor row = roi_align_forward(ramp(), roi(0, 0, 0, 4, 2), 1.0, 1, 4, 1, false);
  EXPECT_TRUE(at::allclose(row.flatten(), at::tensor(at::ArrayRef<float>({4.5, 5.5, 6.5, 7.0}))));
}

TEST(RoiAlign, SamplingRatioOneTwoAndAdaptive) {
  const at::Tensor whole = roi(0, 0, 0, 4, 4);
  EXPECT_FLOAT_EQ(pooled_value(ramp(), whole, 1, false), 10.0f);  // one sample at (2, 2)
  EXPECT_FLOAT_EQ(pooled_value(ramp(), whole, 2, false), 10.0f);  // samples at 1 and 3
  // Adaptive: ceil(4 / 1) = 4 samples per axis at 0.5, 1.5, 2.5, 3.5; the last
  // is past the last row/column and reads it: mean per axis 7.5 / 4.
  EXPECT_FLOAT_EQ(pooled_value(ramp(), whole, 0, false), 5 * 1.875f);
  EXPECT_FLOAT_EQ(pooled_value(ramp(), whole, -1, false), 5 * 1.875f);
}

TEST(RoiAlign, BilinearWeightsOnADeltaImage) {
  at::Tensor delta = at::zeros({1, 1, 4, 4});
  delta[0][0][1][1] = 1;
  const at::Tensor around = roi(0, 0.5, 0.5, 1.5, 1.5);
  EXPECT_FLOAT_EQ(pooled_value(delta, around, 1, false), 1.0f);  // sample exactly at (1, 1)
  // Samples at 0.75 and 1.25 per axis each give weight 0.75 per axis.
  EXPECT_FLOAT_EQ(pooled_value(delta, around, 2, false), 0.5625f);
}

TEST(RoiAlign, UnalignedRoisAreAtLeastOnePixel) {
  const at::Tensor point = roi(0, 1, 1, 1, 1);
  // Width and height forced to 1: one adaptive sample at (1.5, 1.5).
  EXPECT_FLOAT_EQ(pooled_value(ramp(), point, 0, false), 7.5f);
  // Aligned keeps the zero size: no samples, count 1, output 0.
  EXPECT_FLOAT_EQ(pooled_value(ramp(), point, 0, true), 0.0f);
}

TEST(RoiAlign, EdgeRulesOutsideTheImage) {
  // x samples at -2 (more than one pixel out: reads 0) and 0; y at 0.25, 0.75.
  EXPECT_FLOAT_EQ(pooled_value(ramp(), roi(0, -3, 0, 1, 1), 2, false), (0 + 0 + 1 + 3) / 4.0f);
  // x samples at -1 (exactly one pixel out: clamped to 0) and 0.
  EXPECT_FLOAT_EQ(pooled_value(ramp(), roi(0, -1.5, 0, 0.5, 1), 2, false), 2.0f);
  // y samples at 3.375 (past the last row: reads row 3) and 4.125 (> height: 0).
  EXPECT_FLOAT_EQ(pooled_value(ramp(), roi(0, 0, 3, 1, 4.5), 2, false), (12.25f + 12.75f) / 4.0f);
  // Entirely below the image.
  EXPECT_FLOAT_EQ(pooled_value(ramp(), roi(0, 0, 5.5, 1, 6.5), 2, false), 0.0f);
}

TEST(RoiAlign, SpatialScaleBatchIndexAndChannels) {
  const at::Tensor image = ramp().squeeze(0);
  const at::Tensor first = at::cat({image, 2 * image}, 0);
  const at::Tensor input = at::stack({first, first + 100}, 0);  // [2, 2, 4, 4]
  // (0, 0, 4, 4) at scale 0.5 is (0, 0, 2, 2) on the map.
  const at::Tensor rois = at::cat({roi(1, 0, 0, 4, 4), roi(0, 0, 0, 4, 4)}, 0);
  const at::Tensor out = roi_align_forward(input, rois, 0.5, 1, 1, 2, false);
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{2, 2, 1, 1}));
  const at::Tensor expected = at::tensor(at::ArrayRef<float>({105, 110, 5, 10})).view({2, 2, 1, 1});
  EXPECT_TRUE(at::allclose(out, expected));
}

TEST(RoiAlign, EmptyRoisGiveEmptyOutput) {
  const at::Tensor out = roi_align_forward(at::rand({2, 3, 8, 8}), at::empty({0, 5}), 1.0, 2, 5, 2, true);
  EXPECT_EQ(out.sizes(), (at::IntArrayRef{0, 3, 2, 5}));
  const at::Tensor grad =
      roi_align_backward(at::empty({0, 3, 2, 5}), at::empty({0, 5}), 1.0, 2, 5, 2, 3, 8, 8, 2, true);
  EXPECT_EQ(grad.sizes(), (at::IntArrayRef{2, 3, 8, 8}));
  EXPECT_EQ(grad.abs().sum().item<float>(), 0.0f);
}

TEST(RoiAlign, FloatAndDoubleAgree) {
  at::manual_seed(3);
  const at::Tensor input = at::rand({1, 2, 9, 7});
  const at::Tensor rois = at::tensor(at::ArrayRef<float>({0, 0.3, 1.2, 5.5, 7.9, 0, -2, -1, 3, 4})).view({2, 5});
  const at::Tensor f = roi_align_forward(input, rois, 1.0, 3, 2, 0, true);
  const at::Tensor d = roi_align_forward(input.to(at::kDouble), rois.to(at::kDouble), 1.0, 3, 2, 0, true);
  EXPECT_TRUE(at::allclose(f.to(at::kDouble), d, 1e-5, 1e-6));
}

TEST(RoiAlign, RejectsBadArguments) {
  EXPECT_THROW(roi_align_forward(ramp(), roi(1, 0, 0, 1, 1), 1.0, 1, 1, 1, false), c10::Error);
  EXPECT_THROW(roi_align_forward(ramp(), at::zeros({1, 4}), 1.0, 1, 1, 1, false), c10::Error);
  EXPECT_THROW(roi_align_forward(ramp(), roi(0, 0, 0, 1, 1), 1.0, 0, 1, 1, false), c10::Error);
}

struct GradCase {
  double spatial_scale;
  int64_t pooled_height, pooled_width, sampling_ratio;
  bool aligned;
};

TEST(RoiAlign, BackwardMatchesFiniteDifferences) {
  at::manual_seed(11);
  const int64_t n = 2, c = 3, h = 6, w = 7;
  const at::Tensor base = at::rand({n, c, h, w}, at::kDouble);
  // Rois strictly inside the image (in input coordinates, scale applied below).
  const int64_t k = 4;
  const at::Tensor corner = at::rand({k, 2}, at::kDouble) * 2 + 0.6;
  const at::Tensor size = at::rand({k, 2}, at::kDouble) * 2.5 + 0.4;
  const at::Tensor batch = at::tensor(at::ArrayRef<double>({0, 1, 1, 0})).view({k, 1});
  const at::Tensor rois = at::cat({batch, corner, corner + size}, 1);

  for (const GradCase& gc : {GradCase{1.0, 2, 2, 2, true}, GradCase{1.0, 3, 2, 0, false}, GradCase{1.0, 2, 3, 1, true},
                             GradCase{0.5, 2, 2, 0, true}}) {
    const at::Tensor scaled_rois =
        gc.spatial_scale == 1.0 ? rois : at::cat({batch, rois.slice(1, 1) / gc.spatial_scale}, 1);
    at::Tensor input = base.clone().requires_grad_(true);
    const at::Tensor weight = at::rand({k, c, gc.pooled_height, gc.pooled_width}, at::kDouble);
    const at::Tensor out = roi_align(input, scaled_rois, gc.spatial_scale, gc.pooled_height, gc.pooled_width,
                                     gc.sampling_ratio, gc.aligned);
    (out * weight).sum().backward();
    const at::Tensor analytic = input.grad();
    ASSERT_TRUE(analytic.defined());

    const double eps = 1e-6;
    at::Tensor numeric = at::zeros_like(base);
    at::Tensor probe = base.clone();
    double* p = probe.data_ptr<double>();
    double* g = numeric.data_ptr<double>();
    auto loss = [&] {
      return (roi_align_forward(probe, scaled_rois, gc.spatial_scale, gc.pooled_height, gc.pooled_width,
                                gc.sampling_ratio, gc.aligned) *
              weight)
          .sum()
          .item<double>();
    };
    for (int64_t i = 0; i < probe.numel(); ++i) {
      const double saved = p[i];
      p[i] = saved + eps;
      const double up = loss();
      p[i] = saved - eps;
      const double down = loss();
      p[i] = saved;
      g[i] = (up - down) / (2 * eps);
    }
    EXPECT_LT((analytic - numeric).abs().max().item<double>(), 1e-6)
        << "scale " << gc.spatial_scale << " pooled " << gc.pooled_height << "x" << gc.pooled_width << " sampling "
        << gc.sampling_ratio << " aligned " << gc.aligned;
    EXPECT_GT(analytic.abs().sum().item<double>(), 0.0);
    // The plain backward gives the same gradient.
    const at::Tensor direct = roi_align_backward(weight, scaled_rois, gc.spatial_scale, gc.pooled_height,
                                                 gc.pooled_width, n, c, h, w, gc.sampling_ratio, gc.aligned);
    EXPECT_TRUE(at::allclose(direct, analytic, 0, 1e-12));
  }
}

TEST(RoiAlign, BackwardOfOnesCountsSampledContributions) {
  // Every sample inside the image spreads weights summing to 1; a bin divides
  // by its sample count, so a roi inside the image contributes 1 per bin.
  at::Tensor input = at::rand({1, 2, 4, 4}).requires_grad_(true);
  const at::Tensor inside = at::cat({roi(0, 0, 0, 2, 2), roi(0, 1, 0.5, 3.5, 3)}, 0);
  roi_align(input, inside, 1.0, 2, 3, 2, false).backward(at::ones({2, 2, 2, 3}));
  EXPECT_NEAR(input.grad().sum().item<float>(), 2 * 2 * 2 * 3, 1e-4);

  // Half the samples fall more than a pixel left of the image: 2 of 4 count.
  at::Tensor single = at::rand({1, 1, 4, 4}).requires_grad_(true);
  roi_align(single, roi(0, -3, 0, 1, 1), 1.0, 1, 1, 2, false).backward(at::ones({1, 1, 1, 1}));
  EXPECT_NEAR(single.grad().sum().item<float>(), 0.5f, 1e-6);

  // Samples at 0.5 and 1.5 per axis spread [0.25, 0.5, 0.25] along each axis.
  at::Tensor pixels = at::rand({1, 1, 4, 4}).requires_grad_(true);
  roi_align(pixels, roi(0, 0, 0, 2, 2), 1.0, 1, 1, 2, false).backward(at::ones({1, 1, 1, 1}));
  const at::Tensor axis = at::tensor(at::ArrayRef<float>({0.25, 0.5, 0.25, 0}));
  EXPECT_TRUE(at::allclose(pixels.grad().view({4, 4}), at::outer(axis, axis)));
}

}  // namespace
}  // namespace dtrain::vision::ops

namespace dtrain::vision::ops {
namespace {

// With many channels the kernels read the features channels-last; the result
// must be the same, to the bit, as the per-plane kernels give a few channels
// at a time.
// The channels-last path (16 channels or more; its loops vectorized, 37 leaves a tail after the
// vector widths) against the per-channel-plane path, run on slices of at most 8 channels.
TEST(RoiAlign, ManyChannelsGiveTheSameBitsAsFewChannels) {
  at::manual_seed(3);
  const at::Tensor rois =
      at::tensor({0.f, 1.5f, 2.f, 15.f, 11.f, 1.f, -2.f, 3.f, 30.f, 19.f, 1.f, 4.f, 4.f, 4.5f, 4.2f}).view({3, 5});
  for (const int64_t channels : {32, 37}) {
    const at::Tensor input = at::rand({2, channels, 20, 24});
    for (const bool aligned : {false, true}) {
      for (const int64_t sampling : {0, 2}) {
        const at::Tensor many = roi_align_forward(input, rois, 0.5, 7, 7, sampling, aligned);
        const at::Tensor grad = at::rand({3, channels, 7, 7});
        const at::Tensor back = roi_align_backward(grad, rois, 0.5, 7, 7, 2, channels, 20, 24, sampling, aligned);
        std::vector<at::Tensor> parts, back_parts;
        for (int64_t c = 0; c < channels; c += 8) {
          const int64_t width = std::min<int64_t>(8, channels - c);
          parts.push_back(
              roi_align_forward(input.narrow(1, c, width).contiguous(), rois, 0.5, 7, 7, sampling, aligned));
          back_parts.push_back(roi_align_backward(grad.narrow(1, c, width).contiguous(), rois, 0.5, 7, 7, 2, width, 20,
                                                  24, sampling, aligned));
        }
        const std::string where = "channels " + std::to_string(channels) + " aligned " + std::to_string(aligned) +
                                  " sampling " + std::to_string(sampling);
        EXPECT_TRUE(many.equal(at::cat(parts, 1))) << where;
        EXPECT_TRUE(back.equal(at::cat(back_parts, 1))) << where;
      }
    }
  }
}

}  // namespace
}  // namespace dtrain::vision::ops
