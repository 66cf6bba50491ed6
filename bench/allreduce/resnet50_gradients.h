// The 161 gradient tensors of torchvision's ResNet-50, in the order its parameters are
// declared (25,557,032 values): what data-parallel training of it allreduces every step.
#pragma once

#include <cstdint>
#include <vector>

namespace dtrain::bench {

inline std::vector<std::vector<std::int64_t>> resnet50_gradient_shapes() {
  std::vector<std::vector<std::int64_t>> shapes;
  auto conv = [&](std::int64_t out, std::int64_t in, std::int64_t k) { shapes.push_back({out, in, k, k}); };
  auto batch_norm = [&](std::int64_t channels) {
    shapes.push_back({channels});  // weight
    shapes.push_back({channels});  // bias
  };
  conv(64, 3, 7);
  batch_norm(64);
  std::int64_t in = 64;
  const std::int64_t planes[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int layer = 0; layer < 4; ++layer) {
    for (int b = 0; b < blocks[layer]; ++b) {
      const std::int64_t width = planes[layer], out = planes[layer] * 4;
      conv(width, in, 1);
      batch_norm(width);
      conv(width, width, 3);
      batch_norm(width);
      conv(out, width, 1);
      batch_norm(out);
      if (b == 0) {  // the projection shortcut
        conv(out, in, 1);
        batch_norm(out);
      }
      in = out;
    }
  }
  shapes.push_back({1000, 2048});  // fc weight
  shapes.push_back({1000});        // fc bias
  return shapes;
}

}  // namespace dtrain::bench
