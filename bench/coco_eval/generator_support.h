#pragma once

// What the benchmark's two set generators share: what they make, a seeded
// random source that gives the same numbers everywhere, and RLE counts strings
// as JSON text.
#include <cstdint>
#include <string>

namespace dtrain::bench {

// An evaluation set as COCO-format JSON texts.
struct GeneratedCocoSet {
  std::string ground_truth;  // instances_*.json
  std::string box_results;   // [{image_id, category_id, bbox, score}]
  std::string mask_results;  // [{image_id, category_id, segmentation (compressed RLE), score}]
  size_t annotations = 0;
  size_t detections = 0;
};

// SplitMix64: tiny, fast, and the same numbers on every machine (unlike the
// standard library's distributions).
class SplitMixRandom {
 public:
  explicit SplitMixRandom(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  int integer(int lo, int hi) { return lo + static_cast<int>(uniform() * (hi - lo + 1)); }
  bool chance(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

// RLE counts strings use '0'..'o', which includes the backslash.
inline std::string json_escaped_counts(const std::string& counts) {
  std::string out;
  out.reserve(counts.size() + 8);
  for (char c : counts) {
    if (c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace dtrain::bench
