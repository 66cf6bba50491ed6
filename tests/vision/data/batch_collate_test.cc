#include <gtest/gtest.h>

#include "vision/data/batch_collate.h"

namespace dtrain::vision {
namespace {

TrainingSample sample(int64_t id, uint32_t h, uint32_t w, size_t instances) {
  TrainingSample s;
  s.image_id = id;
  s.image.height = h;
  s.image.width = w;
  s.image.data.resize(size_t{3} * h * w);
  for (size_t i = 0; i < s.image.data.size(); ++i) s.image.data[i] = static_cast<float>(id * 1000 + i % 997) + 0.5f;
  s.targets.height = h;
  s.targets.width = w;
  s.targets.masks.assign(instances * h * w, 0);
  for (size_t k = 0; k < instances; ++k) {
    const float x = static_cast<float>(k);
    s.targets.boxes.push_back({x, x + 1, x + 3, x + 4});
    s.targets.labels.push_back(static_cast<int64_t>(k + 1));
    s.targets.mask(k)[k] = 1;
  }
  return s;
}

TEST(BatchCollate, PadsToAMultipleOf32AndKeepsTargetsAligned) {
  const std::vector<TrainingSample> samples = {sample(1, 40, 70, 2), sample(2, 65, 33, 0), sample(3, 64, 64, 3)};
  const TensorBatch batch = collate_batch(samples);
  EXPECT_EQ(batch.images.sizes(), (at::IntArrayRef{3, 3, 96, 96}));
  EXPECT_EQ(batch.images.scalar_type(), at::kFloat);
  ASSERT_EQ(batch.targets.size(), 3u);
  for (size_t i = 0; i < samples.size(); ++i) {
    const TrainingSample& s = samples[i];
    EXPECT_EQ(batch.image_sizes[i], (std::array<int64_t, 2>{s.image.height, s.image.width}));
    const at::Tensor image = batch.images[static_cast<int64_t>(i)];
    const at::Tensor original =
        at::from_blob(const_cast<float*>(s.image.data.data()), {3, s.image.height, s.image.width}, at::kFloat);
    EXPECT_TRUE(image.slice(1, 0, s.image.height).slice(2, 0, s.image.width).equal(original));
    // Padding is zero.
    EXPECT_EQ(image.slice(1, s.image.height).abs().sum().item<float>(), 0.0f);
    EXPECT_EQ(image.slice(2, s.image.width).abs().sum().item<float>(), 0.0f);

    const TensorTargets& t = batch.targets[i];
    const auto k = static_cast<int64_t>(s.targets.size());
    EXPECT_EQ(t.image_id, s.image_id);
    EXPECT_EQ(t.boxes.sizes(), (at::IntArrayRef{k, 4}));
    EXPECT_EQ(t.labels.sizes(), (at::IntArrayRef{k}));
    EXPECT_EQ(t.labels.scalar_type(), at::kLong);
    EXPECT_EQ(t.masks.sizes(), (at::IntArrayRef{k, s.image.height, s.image.width}));
    EXPECT_EQ(t.masks.scalar_type(), at::kByte);
    for (int64_t j = 0; j < k; ++j) {
      EXPECT_EQ(t.labels[j].item<int64_t>(), j + 1);
      EXPECT_EQ(t.boxes[j][0].item<float>(), static_cast<float>(j));
      EXPECT_EQ(t.boxes[j][3].item<float>(), static_cast<float>(j) + 4);
      EXPECT_EQ(t.masks[j].sum().item<int64_t>(), 1);
      EXPECT_EQ(t.masks[j][0][j].item<uint8_t>(), 1);
    }
  }
}

TEST(BatchCollate, ExactMultiplesAreNotPaddedFurther) {
  const TensorBatch batch = collate_batch({sample(1, 64, 32, 1)});
  EXPECT_EQ(batch.images.sizes(), (at::IntArrayRef{1, 3, 64, 32}));
  const TensorBatch other = collate_batch({sample(1, 65, 31, 1)}, 16);
  EXPECT_EQ(other.images.sizes(), (at::IntArrayRef{1, 3, 80, 32}));
}

}  // namespace
}  // namespace dtrain::vision

namespace dtrain::vision {
namespace {

// The data pipeline's resize against LibTorch's own kernels (what
// torchvision's F.interpolate calls): bilinear for images to within a float32
// rounding (ATen may fuse multiply-adds), nearest for masks exactly.
TEST(ResizeParity, MatchesLibTorchInterpolation) {
  const std::pair<uint32_t, uint32_t> shapes[][2] = {
      {{37, 53}, {61, 88}}, {{480, 640}, {799, 1066}}, {{90, 70}, {45, 31}}, {{5, 9}, {5, 12}}};
  for (const auto& [in, out] : shapes) {
    FloatImage image;
    image.height = in.first;
    image.width = in.second;
    image.data.resize(size_t{3} * in.first * in.second);
    for (size_t i = 0; i < image.data.size(); ++i) image.data[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f;
    InstanceTargets t;
    t.height = in.first;
    t.width = in.second;
    t.labels = {1};
    t.boxes = {{0, 0, 1, 1}};
    t.masks.resize(size_t{in.first} * in.second);
    for (size_t i = 0; i < t.masks.size(); ++i) t.masks[i] = ((i * 31) % 7) < 3;

    const at::Tensor src = at::from_blob(image.data.data(), {1, 3, in.first, in.second}, at::kFloat).clone();
    const at::Tensor mask_src = at::from_blob(t.masks.data(), {1, 1, in.first, in.second}, at::kByte).to(at::kFloat);
    FloatImage resized = image;
    resize(resized, t, out.first, out.second);
    const at::Tensor expected = at::upsample_bilinear2d(src, {out.first, out.second}, false);
    const at::Tensor got = at::from_blob(resized.data.data(), {1, 3, out.first, out.second}, at::kFloat);
    const at::Tensor diff = (got - expected).abs();
    const int64_t worst = diff.flatten().argmax().item<int64_t>();
    EXPECT_LE(diff.max().item<float>(), 1e-6f)
        << in.first << "x" << in.second << " at flat " << worst << " (c " << worst / (out.first * out.second) << ", y "
        << (worst / out.second) % out.first << ", x " << worst % out.second << ") got "
        << got.flatten()[worst].item<float>() << " expected " << expected.flatten()[worst].item<float>();
    const at::Tensor expected_mask = at::upsample_nearest2d(mask_src, {out.first, out.second}).to(at::kByte);
    const at::Tensor got_mask = at::from_blob(t.masks.data(), {1, 1, out.first, out.second}, at::kByte);
    EXPECT_TRUE(got_mask.equal(expected_mask)) << in.first << "x" << in.second;
  }
}

}  // namespace
}  // namespace dtrain::vision
