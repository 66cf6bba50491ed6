#include "vision/data/batch_collate.h"

#include <algorithm>
#include <cstring>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {

TensorBatch collate_batch(const std::vector<TrainingSample>& samples, int64_t size_divisible, bool pinned) {
  if (samples.empty()) throw CocoError("collate_batch: empty batch");
  if (size_divisible < 1) throw CocoError("collate_batch: size_divisible must be at least 1");
  int64_t max_h = 0, max_w = 0;
  for (const auto& s : samples) {
    max_h = std::max<int64_t>(max_h, s.image.height);
    max_w = std::max<int64_t>(max_w, s.image.width);
  }
  const int64_t h = (max_h + size_divisible - 1) / size_divisible * size_divisible;
  const int64_t w = (max_w + size_divisible - 1) / size_divisible * size_divisible;
  const auto n = static_cast<int64_t>(samples.size());

  const auto host = at::TensorOptions().pinned_memory(pinned);
  TensorBatch batch;
  batch.images = at::zeros({n, 3, h, w}, host.dtype(at::kFloat));
  float* base = batch.images.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    const TrainingSample& s = samples[static_cast<size_t>(i)];
    const size_t plane = size_t{s.image.height} * s.image.width;
    for (int64_t c = 0; c < 3; ++c) {
      for (uint32_t y = 0; y < s.image.height; ++y) {
        std::memcpy(base + ((i * 3 + c) * h + y) * w,
                    s.image.data.data() + static_cast<size_t>(c) * plane + size_t{y} * s.image.width,
                    sizeof(float) * s.image.width);
      }
    }
    batch.image_sizes.push_back({s.image.height, s.image.width});

    const InstanceTargets& t = s.targets;
    const auto k = static_cast<int64_t>(t.size());
    TensorTargets out;
    out.image_id = s.image_id;
    out.boxes = at::empty({k, 4}, host.dtype(at::kFloat));
    if (k > 0) std::memcpy(out.boxes.data_ptr<float>(), t.boxes.data(), sizeof(float) * 4 * t.size());
    out.labels = at::empty({k}, host.dtype(at::kLong));
    if (k > 0) std::memcpy(out.labels.data_ptr<int64_t>(), t.labels.data(), sizeof(int64_t) * t.size());
    out.masks = at::empty({k, static_cast<int64_t>(t.height), static_cast<int64_t>(t.width)}, host.dtype(at::kByte));
    if (!t.masks.empty()) std::memcpy(out.masks.data_ptr<uint8_t>(), t.masks.data(), t.masks.size());
    batch.targets.push_back(std::move(out));
  }
  return batch;
}

}  // namespace dtrain::vision
