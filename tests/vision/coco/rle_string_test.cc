#include "vision/coco/rle_string.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

RunLengthMask counts_mask(std::vector<uint32_t> counts) { return RunLengthMask{0, 0, std::move(counts)}; }

TEST(RleString, SmallCountsAreOneCharacterEach) {
  EXPECT_EQ(rle_counts_to_string(counts_mask({3, 2, 5})), "325");
  // From the fourth count on the difference to two places back is written: 7-2 = 5.
  EXPECT_EQ(rle_counts_to_string(counts_mask({3, 2, 5, 7})), "3255");
}

TEST(RleString, NegativeDeltaAndMultiCharacterNumbers) {
  // 4 - 10 = -6: low five bits 11010 = 26, sign bit set, no more: '0' + 26 = 'J'.
  EXPECT_EQ(rle_counts_to_string(counts_mask({1, 10, 1, 4})), "1:1J");
  // 40 = 0b1'01000: chunk 8 with the continuation bit (8 + 32 + 48 = 'X'), then 1.
  EXPECT_EQ(rle_counts_to_string(counts_mask({40})), "X1");
  // 16 has the sign bit set in its first chunk, so it needs a second (zero) chunk.
  EXPECT_EQ(rle_counts_to_string(counts_mask({16})), "`0");
}

TEST(RleString, ParsesBackWithSize) {
  const RunLengthMask rle = rle_from_counts_string("1:1J", 5, 3);
  EXPECT_EQ(rle.height, 5u);
  EXPECT_EQ(rle.width, 3u);
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{1, 10, 1, 4}));
  EXPECT_EQ(rle_from_counts_string("", 2, 2).counts, std::vector<uint32_t>{});
}

TEST(RleString, RejectsBadCharactersAndTruncatedNumbers) {
  EXPECT_THROW(rle_from_counts_string("12 3", 2, 2), CocoError);
  EXPECT_THROW(rle_from_counts_string("1X", 2, 2), CocoError);  // 'X' promises more
}

TEST(RleStringProperty, RoundTripsRandomCounts) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<uint32_t> length(0, 60);
  std::uniform_int_distribution<uint32_t> small(0, 700), large(0, 4000000);
  std::bernoulli_distribution pick_large(0.2);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint32_t> counts(length(rng));
    for (auto& c : counts) c = pick_large(rng) ? large(rng) : small(rng);
    const std::string text = rle_counts_to_string(counts_mask(counts));
    for (char ch : text) ASSERT_TRUE(ch >= '0' && ch <= 'o');
    ASSERT_EQ(rle_from_counts_string(text, 0, 0).counts, counts) << text;
  }
}

// The COCO API's fake segmentation results hold strings pycocotools wrote;
// decoding and re-encoding each must give the same bytes back.
TEST(RleStringGolden, ReencodesEveryFakeResultStringIdentically) {
  std::ifstream in(COCO_FAKE100_DIR "/instances_val2014_fakesegm100_results.json");
  ASSERT_TRUE(in);
  const auto results = nlohmann::json::parse(in);
  ASSERT_EQ(results.size(), 734u);
  for (const auto& r : results) {
    const std::string counts = r["segmentation"]["counts"];
    const uint32_t h = r["segmentation"]["size"][0], w = r["segmentation"]["size"][1];
    const RunLengthMask rle = rle_from_counts_string(counts, h, w);
    uint64_t total = 0;
    for (uint32_t c : rle.counts) total += c;
    ASSERT_EQ(total, uint64_t{h} * w);
    ASSERT_EQ(rle_counts_to_string(rle), counts);
  }
}

}  // namespace
}  // namespace dtrain::vision
