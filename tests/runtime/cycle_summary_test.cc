// The negotiation's shortcut: when every rank may plan a cycle without the coordinator.
#include "runtime/cycle_summary.h"

#include <gtest/gtest.h>

#include "dtrain/dtrain.h"
#include "runtime/response_cache.h"
#include "runtime/transport/recursive_doubling.h"

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

// Riders: a rank's data for an allreduce it holds, carried on its summary.

// Rank r's summary holding `positions`, with a rider of `payload` (and r) for each of
// `riding`; the bytes live in `store`.
std::vector<char> with_riders(std::uint32_t rank, std::vector<std::uint32_t> positions,
                              std::vector<std::uint32_t> riding, const std::string& payload, bool needs = false) {
  std::vector<SummaryRider> riders;
  static std::vector<std::string> store;  // alive for the encode below
  store.assign(riding.size(), payload + static_cast<char>('0' + rank));
  for (std::size_t i = 0; i < riding.size(); ++i)
    riders.push_back({riding[i], rank, {store[i].data(), store[i].size()}});
  return encode(summary_of(positions, needs), 4096, riders);
}

std::string text(std::span<const char> bytes) { return {bytes.begin(), bytes.end()}; }

TEST(CycleSummaryRiders, EveryRanksDataForAnAgreedPositionArrivesInRankOrder) {
  const auto a = with_riders(0, {3, 9}, {3, 9}, "x");
  const auto b = with_riders(1, {3, 9}, {3, 9}, "x");
  const auto c = with_riders(2, {3, 9}, {3}, "x");  // no room for 9's data on rank 2
  const std::vector<char> all = combined(combined(c, a), b);
  EXPECT_EQ(all, combined(a, combined(b, c)));
  EXPECT_EQ(all, combined(combined(b, c), a));
  EXPECT_EQ(agreed_positions(all), (std::vector<std::uint32_t>{3, 9}));
  const auto ridden = ridden_allreduces(all, 3);
  ASSERT_EQ(ridden.size(), 1u);  // 9 runs over the transport
  EXPECT_EQ(ridden[0].position, 3u);
  ASSERT_EQ(ridden[0].by_rank.size(), 3u);
  for (std::size_t r = 0; r < 3; ++r) EXPECT_EQ(text(ridden[0].by_rank[r]), "x" + std::to_string(r));
}

// Whatever order recursive doubling combines in, any world size: the same bytes on every rank.
TEST(CycleSummaryRiders, RecursiveDoublingGivesEveryRankTheSameRiders) {
  for (int size = 1; size <= 7; ++size) {
    std::vector<std::vector<char>> partial;
    for (int r = 0; r < size; ++r) partial.push_back(with_riders(static_cast<std::uint32_t>(r), {1, 5}, {1, 5}, "ab"));
    const auto results = replay_doubling(
        partial, [](int, std::vector<char>& into, const std::vector<char>& other) { combine_summaries(into, other); });
    for (int r = 0; r < size; ++r) EXPECT_EQ(results[r], results[0]) << size << " ranks, rank " << r;
    const auto ridden = ridden_allreduces(results[0], size);
    ASSERT_EQ(ridden.size(), 2u) << size << " ranks";
    for (int r = 0; r < size; ++r) EXPECT_EQ(text(ridden[1].by_rank[r]), "ab" + std::to_string(r));
  }
}

// A rider whose position not every rank holds, or in a cycle for the coordinator, is dropped
// on the way: it would only cost bytes in the later steps.
TEST(CycleSummaryRiders, ARiderDiesWhereItsPositionWillNotRunThisCycle) {
  const auto only_one_holds = combined(with_riders(0, {3, 9}, {3, 9}, "x"), with_riders(1, {3}, {3}, "x"));
  const auto plain = combined(with_riders(0, {3}, {3}, "x"), with_riders(1, {3}, {3}, "x"));
  EXPECT_EQ(only_one_holds, plain);
  const auto for_the_coordinator =
      combined(with_riders(0, {3}, {3}, "x"), with_riders(1, {3}, {3}, "x", /*needs=*/true));
  EXPECT_EQ(for_the_coordinator, encode(summary_of({3}, true), 4096));
  EXPECT_TRUE(ridden_allreduces(for_the_coordinator, 2).empty());
}

TEST(CycleSummaryRiders, RidersThatDisagreeAreAnErrorOnEveryRank) {
  const auto longer = with_riders(1, {3}, {3}, "xyz");
  const auto all = combined(with_riders(0, {3}, {3}, "x"), longer);
  EXPECT_THROW(ridden_allreduces(all, 2), Error);
  EXPECT_THROW(combined(longer, longer), Error);  // rank 1's rider twice
  std::vector<char> cut = longer;
  cut.pop_back();
  EXPECT_THROW(decode_summary(cut), Error);
  EXPECT_THROW(combined(cut, longer), Error);
}

}  // namespace
}  // namespace dtrain::runtime
