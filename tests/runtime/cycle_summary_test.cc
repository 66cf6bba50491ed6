// The negotiation's shortcut: when every rank may plan a cycle without the coordinator.
#include "runtime/cycle_summary.h"

#include <gtest/gtest.h>

#include "dtrain/dtrain.h"
#include "runtime/response_cache.h"

namespace dtrain::runtime {
namespace {

CycleSummary summary_of(std::vector<std::uint32_t> positions, bool needs_coordinator = false) {
  CycleSummary summary;
  summary.needs_coordinator = needs_coordinator;
  for (std::uint32_t p : positions) set_bit(summary.cache_bits, p);
  return summary;
}

std::vector<char> combined(std::vector<char> a, const std::vector<char>& b) {
  combine_summaries(a, b);
  return a;
}

// What every rank's reduction hands agreed_positions(): the summaries combined (in rank order
// here; the transport's recursive doubling combines in another, with the same result).
std::vector<char> reduced(const std::vector<CycleSummary>& summaries) {
  std::vector<char> combined = encode(summaries.front(), 4096);
  for (std::size_t r = 1; r < summaries.size(); ++r) combine_summaries(combined, encode(summaries[r], 4096));
  return combined;
}

TEST(CycleSummary, SameBitsEverywhereAreRunInPositionOrder) {
  const auto agreed =
      agreed_positions(reduced({summary_of({70, 3, 9}), summary_of({9, 70, 3}), summary_of({3, 9, 70})}));
  ASSERT_TRUE(agreed.has_value());
  EXPECT_EQ(*agreed, (std::vector<std::uint32_t>{3, 9, 70}));
}

TEST(CycleSummary, NothingSubmittedAnywhereIsAnAgreedIdleCycle) {
  const auto agreed = agreed_positions(reduced({summary_of({}), summary_of({})}));
  ASSERT_TRUE(agreed.has_value());
  EXPECT_TRUE(agreed->empty());
}

// Rank 1 has not submitted 9 yet: 3 runs now, 9 once rank 1 holds it too (the ranks keep it).
TEST(CycleSummary, OnlyTheBitsEveryRankHoldsRun) {
  EXPECT_EQ(agreed_positions(reduced({summary_of({3, 9}), summary_of({3})})), (std::vector<std::uint32_t>{3}));
  EXPECT_EQ(agreed_positions(reduced({summary_of({3, 9, 130}), summary_of({130, 9}), summary_of({9, 3, 130})})),
            (std::vector<std::uint32_t>{9, 130}));
  EXPECT_EQ(agreed_positions(reduced({summary_of({}), summary_of({64})})), std::vector<std::uint32_t>{});
}

// Every rank must end with the same bytes whatever order the transport combines in.
TEST(CycleSummary, CombiningIsCanonicalAndOrderDoesNotMatter) {
  const std::vector<char> a = encode(summary_of({1, 70, 200}), 4096);
  const std::vector<char> b = encode(summary_of({1, 200}, true), 4096);
  const std::vector<char> c = encode(summary_of({1, 70}), 4096);
  EXPECT_EQ(combined(a, combined(b, c)), combined(combined(c, a), b));
  EXPECT_EQ(combined(a, c), encode(summary_of({1, 70}), 4096));  // no trailing zero words
  EXPECT_EQ(combined(a, b), encode(summary_of({1, 200}, true), 4096));
}

TEST(CycleSummary, AnyRankThatNeedsTheCoordinatorGetsIt) {
  EXPECT_FALSE(agreed_positions(reduced({summary_of({3}), summary_of({3}, true)})).has_value());
  EXPECT_FALSE(agreed_positions(reduced({summary_of({}, true), summary_of({})})).has_value());
  EXPECT_FALSE(agreed_positions(reduced({summary_of({3}, true), summary_of({3}, true)})).has_value());
}

TEST(CycleSummary, SurvivesEncodingAndTrailingZeroWordsDoNotCount) {
  CycleSummary grown = summary_of({5});
  grown.cache_bits.resize(4, 0);  // a rank whose bit vector once grew longer
  const CycleSummary back = decode_summary(encode(grown, 4096));
  EXPECT_FALSE(back.needs_coordinator);
  EXPECT_EQ(set_positions(back.cache_bits), (std::vector<std::uint32_t>{5}));
  EXPECT_EQ(encode(grown, 4096), encode(summary_of({5}), 4096));  // so the ranks agree
  EXPECT_EQ(agreed_positions(reduced({grown, summary_of({5})})), (std::vector<std::uint32_t>{5}));
  EXPECT_TRUE(decode_summary(encode(summary_of({}, true), 4096)).needs_coordinator);
}

TEST(CycleSummary, BitsLongerThanTheTransportCarriesGoToTheCoordinator) {
  const CycleSummary wide = summary_of({5000});  // 79 words: more than 64 bytes
  const std::vector<char> bytes = encode(wide, 64);
  EXPECT_LE(bytes.size(), 64u);
  const CycleSummary back = decode_summary(bytes);
  EXPECT_TRUE(back.needs_coordinator);
  EXPECT_FALSE(agreed_positions(combined(bytes, bytes)).has_value());
}

TEST(CycleSummary, AMalformedSummaryIsAnError) {
  const std::vector<char> good = encode(summary_of({1}), 4096);
  std::vector<char> bytes = good;
  bytes.push_back(0);
  EXPECT_THROW(decode_summary(bytes), Error);
  EXPECT_THROW(combined(good, bytes), Error);
  bytes.resize(3);
  EXPECT_THROW(decode_summary(bytes), Error);
  EXPECT_THROW(combined(bytes, good), Error);
}

}  // namespace
}  // namespace dtrain::runtime
