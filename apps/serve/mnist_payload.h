#pragma once

// The MNIST endpoint's wire format, without LibTorch.
//
// Request: a 28x28 image as image/png or image/jpeg (grayscale; colour is
// converted to luminance), or application/json holding pixel intensities
// 0..255 (0 background, 255 ink, as MNIST's files): one image as 28 rows of
// 28 numbers or as 784 numbers, or a batch as a list of such images,
// optionally wrapped as {"instances": [...]}.
// Response: {"predictions": [{"label": 7, "probabilities": [p0, ..., p9]}, ...]},
// one entry per image in request order.
#include <cstddef>
#include <string>
#include <vector>

#include "serving/invocation.h"

namespace dtrain::serve {

constexpr int kMnistSide = 28;
constexpr int kMnistPixels = kMnistSide * kMnistSide;
constexpr int kMnistClasses = 10;

struct MnistBatch {
  size_t count = 0;
  std::vector<float> pixels;  // count x 28 x 28, row-major, 0..255
};

// Throws serving::InvocationError: 415 for another content type, 400 for an
// undecodable image, an image of another size, or JSON of the wrong shape
// (naming the index and what was expected).
MnistBatch decode_mnist_request(const serving::InvocationRequest& request);

// `probabilities`: count x 10, each row summing to 1.
std::string encode_mnist_response(const std::vector<float>& probabilities, size_t count);

}  // namespace dtrain::serve
