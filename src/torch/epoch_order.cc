#include "torch/epoch_order.h"

#include <numeric>
#include <random>
#include <utility>

namespace dtrain::libtorch {

std::vector<std::size_t> epoch_order(std::size_t size, bool shuffle, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::size_t> order(size);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!shuffle) return order;
  std::mt19937_64 generator(seed + static_cast<std::uint64_t>(epoch));
  for (std::size_t i = order.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(generator() % i);
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

}  // namespace dtrain::libtorch
