#include "flight_record/hang_verdict.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dtrain::flight_record {
namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kWritten = 1'000 * kSecond;  // when every rank wrote its record

CollectiveRecord finished(std::uint64_t sequence, const std::string& name, std::int64_t at_s) {
  CollectiveRecord c;
  c.sequence = sequence;
  c.name = name;
  c.operation = "allreduce";
  c.shape = {4};
  c.dtype = "float32";
  c.device = "cpu";
  c.state = CollectiveState::kFinished;
  c.submitted_us = at_s * kSecond - 1000;
  c.started_us = at_s * kSecond - 500;
  c.finished_us = at_s * kSecond;
  return c;
}

CollectiveRecord waiting(std::uint64_t sequence, const std::string& name, std::int64_t since_s) {
  CollectiveRecord c = finished(sequence, name, since_s);
  c.state = CollectiveState::kSubmitted;
  c.started_us = 0;
  c.finished_us = 0;
  c.submitted_us = since_s * kSecond;
  return c;
}

RankRecord rank_record(int rank, int size, std::vector<CollectiveRecord> collectives) {
  RankRecord r;
  r.rank = rank;
  r.size = size;
  r.host = "h";
  r.reason = "stalled for 2 s";
  r.written_us = kWritten;
  r.collectives = std::move(collectives);
  return r;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(HangVerdict, TwoRanksThatPartedWaysAreNamedWithWhereTheyParted) {
  // Both reduced 'step.a'; rank 0 then waits on 'step.b', which rank 1 skipped for 'step.c'.
  const std::string verdict = hang_verdict({rank_record(1, 2, {finished(0, "step.a", 930), waiting(1, "step.c", 939)}),
                                            rank_record(0, 2, {finished(0, "step.a", 930), waiting(1, "step.b", 940)})},
                                           2);
  EXPECT_TRUE(contains(verdict,
                       "Allreduce 'step.b' is awaited by rank 0 (for up to 60.0 s) and was never submitted "
                       "by rank 1"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "Allreduce 'step.c' is awaited by rank 1")) << verdict;
  EXPECT_TRUE(contains(verdict,
                       "Ranks 0 and 1 wait on each other after allreduce 'step.a': rank 0 called 'step.b' "
                       "where rank 1 called 'step.c' (one of them skipped a collective, or they call them "
                       "in different orders)"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "Look at ranks 0, 1 first.")) << verdict;
  EXPECT_TRUE(contains(verdict, "Flight records of 2 of 2 ranks (written on: stalled for 2 s).")) << verdict;
}

TEST(HangVerdict, ARankThatNeverSubmittedTheOldestWaitIsTheOneToLookAt) {
  // Asynchronous submissions: rank 1 skipped 'step.b' and waits on nothing the others lack.
  const std::string verdict = hang_verdict({rank_record(0, 3, {waiting(1, "step.b", 940), waiting(2, "step.c", 941)}),
                                            rank_record(1, 3, {waiting(1, "step.c", 941)}),
                                            rank_record(2, 3, {waiting(1, "step.b", 940), waiting(2, "step.c", 941)})},
                                           3);
  EXPECT_TRUE(contains(verdict,
                       "Allreduce 'step.b' is awaited by ranks 0, 2 (for up to 60.0 s) and was never "
                       "submitted by rank 1"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "Look at rank 1 first.")) << verdict;
}

TEST(HangVerdict, ARankInItsOwnCodeIsNamedWithItsLastCollective) {
  const std::string verdict = hang_verdict({rank_record(0, 3, {finished(0, "step.a", 930), waiting(1, "step.b", 935)}),
                                            rank_record(1, 3, {finished(0, "step.a", 930)}),
                                            rank_record(2, 3, {finished(0, "step.a", 930), waiting(1, "step.b", 936)})},
                                           3);
  EXPECT_TRUE(contains(verdict,
                       "Allreduce 'step.b' is awaited by ranks 0, 2 (for up to 65.0 s) and was never "
                       "submitted by rank 1"))
      << verdict;
  EXPECT_TRUE(contains(verdict,
                       "Rank 1 has nothing in flight: its last collective, allreduce 'step.a', finished "
                       "70.0 s before it wrote its record"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "Look at rank 1 first.")) << verdict;
}

TEST(HangVerdict, CollectivesCalledInDifferentOrdersAreCalledThat) {
  const std::string verdict =
      hang_verdict({rank_record(0, 2, {waiting(0, "x", 940)}), rank_record(1, 2, {waiting(0, "y", 941)})}, 2);
  EXPECT_TRUE(contains(verdict, "Ranks 0 and 1 wait on each other: rank 0 called 'x' where rank 1 called 'y'"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "Look at ranks 0, 1 first.")) << verdict;
}

TEST(HangVerdict, RanksWithoutARecordAndAStuckTransferAreSaidSo) {
  CollectiveRecord moving = waiting(3, "big", 990);
  moving.state = CollectiveState::kStarted;
  moving.started_us = 991 * kSecond;
  const std::string verdict =
      hang_verdict({rank_record(0, 4, {moving}), rank_record(1, 4, {moving}), rank_record(3, 4, {moving})}, 4);
  EXPECT_TRUE(contains(verdict,
                       "Allreduce 'big' was submitted by every rank that wrote a record and its data was "
                       "moving; it is stuck between them"))
      << verdict;
  EXPECT_TRUE(contains(verdict, "Rank 2 wrote no record")) << verdict;
  EXPECT_TRUE(contains(verdict, "Look at rank 2 first.")) << verdict;
}

TEST(HangVerdict, ARanksNewestRecordCountsAndNothingMeansNoVerdict) {
  RankRecord old = rank_record(1, 2, {waiting(0, "step.a", 900)});
  old.written_us = kWritten - 50 * kSecond;
  const std::string verdict = hang_verdict(
      {old, rank_record(1, 2, {finished(0, "step.a", 950)}), rank_record(0, 2, {waiting(1, "step.b", 960)})}, 2);
  EXPECT_TRUE(contains(verdict, "Rank 1 has nothing in flight")) << verdict;
  EXPECT_EQ(hang_verdict({}, 2), "");
}

TEST(HangVerdict, RanksAreListedInRuns) {
  EXPECT_EQ(describe_ranks({}), "");
  EXPECT_EQ(describe_ranks({3}), "3");
  EXPECT_EQ(describe_ranks({7, 2, 3, 4, 5, 0, 3}), "0, 2-5, 7");
}

}  // namespace
}  // namespace dtrain::flight_record
