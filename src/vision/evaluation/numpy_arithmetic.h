#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace dtrain::vision {

// numpy.linspace(start, stop, num, endpoint=True) bit for bit: i*step + start
// with step = (stop - start) / (num - 1), and the last value set to `stop`.
// COCO's IoU and recall thresholds are built this way, and the summary looks
// thresholds up by exact equality, so the last bits matter.
std::vector<double> numpy_linspace(double start, double stop, size_t num);

// numpy's float64 sum (pairwise summation in blocks of eight, 128 at the
// leaves, over chunks of 8192 that are added in sequence) and numpy.mean,
// so averages agree with pycocotools to the last bit.
double numpy_sum(std::span<const double> values);
double numpy_mean(std::span<const double> values);  // NaN for no values

}  // namespace dtrain::vision
