#include "vision/evaluation/numpy_arithmetic.h"

#include <algorithm>
#include <limits>

namespace dtrain::vision {
namespace {

constexpr size_t kUnroll = 8;
constexpr size_t kLeafSize = 128;
// numpy's reduction iterator hands the loop at most this many elements at a
// time (its default buffer size); the chunks' sums are added in sequence.
constexpr size_t kIteratorChunk = 8192;

double pairwise_sum(const double* a, size_t n) {
  if (n < kUnroll) {
    double sum = 0.;
    for (size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= kLeafSize) {
    double r[kUnroll];
    for (size_t j = 0; j < kUnroll; ++j) r[j] = a[j];
    size_t i = kUnroll;
    for (; i < n - (n % kUnroll); i += kUnroll) {
      for (size_t j = 0; j < kUnroll; ++j) r[j] += a[i + j];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % kUnroll;
  return pairwise_sum(a, half) + pairwise_sum(a + half, n - half);
}

}  // namespace

std::vector<double> numpy_linspace(double start, double stop, size_t num) {
  std::vector<double> out(num);
  if (num == 0) return out;
  if (num == 1) {
    out[0] = start;
    return out;
  }
  const double step = (stop - start) / static_cast<double>(num - 1);
  for (size_t i = 0; i < num; ++i) out[i] = static_cast<double>(i) * step + start;
  out[num - 1] = stop;
  return out;
}

double numpy_sum(std::span<const double> values) {
  // numpy starts the reduction from the identity 0.0.
  double sum = 0.0;
  for (size_t start = 0; start < values.size(); start += kIteratorChunk) {
    sum += pairwise_sum(values.data() + start, std::min(kIteratorChunk, values.size() - start));
  }
  return sum;
}

double numpy_mean(std::span<const double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return numpy_sum(values) / static_cast<double>(values.size());
}

}  // namespace dtrain::vision
