#include "launch/rank_assignment.h"

#include <gtest/gtest.h>

#include "launch/launch_error.h"

namespace dtrain::launch {
namespace {

TEST(RankAssignment, FillsHostsInOrderAndUsesOnlyWhatIsNeeded) {
  auto placements = assign_ranks({{"a", 2}, {"b", 3}, {"c", 4}}, 4);
  // rank, size, local_rank, local_size, cross_rank, cross_size, host
  std::vector<RankPlacement> expected = {
      {0, 4, 0, 2, 0, 2, "a"},
      {1, 4, 1, 2, 0, 2, "a"},
      {2, 4, 0, 2, 1, 2, "b"},
      {3, 4, 1, 2, 1, 2, "b"},
  };
  EXPECT_EQ(placements, expected);
  EXPECT_EQ(hosts_used(placements), (std::vector<std::string>{"a", "b"}));
}

TEST(RankAssignment, AllSlots) {
  auto placements = assign_ranks({{"a", 2}, {"b", 3}}, 5);
  ASSERT_EQ(placements.size(), 5u);
  EXPECT_EQ(placements[4], (RankPlacement{4, 5, 2, 3, 1, 2, "b"}));
}

TEST(RankAssignment, SingleHost) {
  auto placements = assign_ranks({{"localhost", 8}}, 3);
  ASSERT_EQ(placements.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(placements[r], (RankPlacement{r, 3, r, 3, 0, 1, "localhost"}));
  }
}

TEST(RankAssignment, RejectsTooManyOrTooFewRanks) {
  try {
    assign_ranks({{"localhost", 4}}, 5);
    FAIL();
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_STREQ(e.what(), "-np 5 but only 4 slots on hosts localhost:4");
  }
  for (int np : {0, -1}) {
    try {
      assign_ranks({{"localhost", 4}}, np);
      FAIL();
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.exit_code(), 2);
      EXPECT_NE(std::string(e.what()).find("-np must be at least 1"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace dtrain::launch
