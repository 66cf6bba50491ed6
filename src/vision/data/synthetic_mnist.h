#pragma once

#include <cstdint>
#include <string>

#include "mnist/mnist_idx.h"
#include "vision/data/synthetic_coco_writer.h"

namespace dtrain::vision {

// `dtrain data make-mnist-instances`: one to four MNIST digits per image,
// each scaled 1.5-3x (bilinear) and placed at random on a random background
// in a contrasting colour. An instance's mask is its digit's stroke pixels
// (scaled intensity above 127) minus those of digits drawn later, written as
// a compressed RLE; category ids 1..10 are digits 0..9 (names "0".."9").
// Digits left with under a quarter of their strokes (or under 20 pixels)
// visible are dropped and not drawn. Train images take digits from MNIST's
// train split, val images from t10k; `mnist_dir` holds the idx files.
void make_mnist_instances_dataset(const SyntheticSpec& spec, const std::string& mnist_dir);
SyntheticImage generate_mnist_image(const mnist::MnistImages& digits, const std::vector<uint8_t>& labels,
                                    uint32_t height, uint32_t width, uint64_t seed);
std::vector<CocoCategory> digit_categories();

}  // namespace dtrain::vision
