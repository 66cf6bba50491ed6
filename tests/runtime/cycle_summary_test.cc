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

// What every rank's exchange hands agreed_positions().
std::vector<std::vector<char>> exchanged(const std::vector<CycleSummary>& summaries) {
  std::vector<std::vector<char>> encoded;
  for (const CycleSummary& summary : summaries) encoded.push_back(encode(summary, 4096));
  return encoded;
}

TEST(CycleSummary, SameBitsEverywhereAreRunInPositionOrder) {
  const auto agreed =
      agreed_positions(exchanged({summary_of({70, 3, 9}), summary_of({9, 70, 3}), summary_of({3, 9, 70})}));
  ASSERT_TRUE(agreed.has_value());
  EXPECT_EQ(*agreed, (std::vector<std::uint32_t>{3, 9, 70}));
}

TEST(CycleSummary, NothingSubmittedAnywhereIsAnAgreedIdleCycle) {
  const auto agreed = agreed_positions(exchanged({summary_of({}), summary_of({})}));
  ASSERT_TRUE(agreed.has_value());
  EXPECT_TRUE(agreed->empty());
}

TEST(CycleSummary, DifferentBitsNeedTheCoordinator) {
  // Rank 1 has not submitted 9 yet: the coordinator holds 9 for it (and its stall inspector
  // watches) while the others go on.
  EXPECT_FALSE(agreed_positions(exchanged({summary_of({3, 9}), summary_of({3})})).has_value());
  EXPECT_FALSE(agreed_positions(exchanged({summary_of({}), summary_of({64})})).has_value());
}

TEST(CycleSummary, AnyRankThatNeedsTheCoordinatorGetsIt) {
  EXPECT_FALSE(agreed_positions(exchanged({summary_of({3}), summary_of({3}, true)})).has_value());
  EXPECT_FALSE(agreed_positions(exchanged({summary_of({}, true), summary_of({})})).has_value());
  EXPECT_FALSE(agreed_positions(exchanged({summary_of({3}, true), summary_of({3}, true)})).has_value());
}

TEST(CycleSummary, SurvivesEncodingAndTrailingZeroWordsDoNotCount) {
  CycleSummary grown = summary_of({5});
  grown.cache_bits.resize(4, 0);  // a rank whose bit vector once grew longer
  const CycleSummary back = decode_summary(encode(grown, 4096));
  EXPECT_FALSE(back.needs_coordinator);
  EXPECT_EQ(set_positions(back.cache_bits), (std::vector<std::uint32_t>{5}));
  EXPECT_EQ(encode(grown, 4096), encode(summary_of({5}), 4096));  // so the ranks agree
  EXPECT_TRUE(agreed_positions(exchanged({grown, summary_of({5})})).has_value());
  EXPECT_TRUE(decode_summary(encode(summary_of({}, true), 4096)).needs_coordinator);
}

TEST(CycleSummary, BitsLongerThanTheTransportCarriesGoToTheCoordinator) {
  const CycleSummary wide = summary_of({5000});  // 79 words: more than 64 bytes
  const std::vector<char> bytes = encode(wide, 64);
  EXPECT_LE(bytes.size(), 64u);
  const CycleSummary back = decode_summary(bytes);
  EXPECT_TRUE(back.needs_coordinator);
  EXPECT_FALSE(agreed_positions({bytes, bytes}).has_value());
}

TEST(CycleSummary, AMalformedSummaryIsAnError) {
  std::vector<char> bytes = encode(summary_of({1}), 4096);
  bytes.push_back(0);
  EXPECT_THROW(decode_summary(bytes), Error);
  bytes.resize(3);
  EXPECT_THROW(decode_summary(bytes), Error);
}

}  // namespace
}  // namespace dtrain::runtime
