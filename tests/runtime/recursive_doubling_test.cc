// The schedule the shortcut's reduction follows across hosts: whatever the world size, every
// rank's message reaches every rank's result, and a rank takes about log2(n) steps.
#include "runtime/transport/recursive_doubling.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace dtrain::runtime {
namespace {

// Replays the schedule with sets of ranks as messages (union: associative, commutative, exact).
std::vector<std::set<int>> replay(int size) {
  std::vector<std::set<int>> partial(static_cast<std::size_t>(size));
  std::vector<DoublingSchedule> schedules;
  for (int r = 0; r < size; ++r) {
    partial[static_cast<std::size_t>(r)] = {r};
    schedules.push_back(doubling_schedule(r, size));
  }
  for (int r = 0; r < size; ++r) {
    const int to = schedules[static_cast<std::size_t>(r)].hands_to;
    if (to < 0) continue;
    EXPECT_EQ(schedules[static_cast<std::size_t>(to)].handed_from, r) << "size " << size;
    partial[static_cast<std::size_t>(to)].insert(r);
  }
  for (std::size_t step = 0; step < schedules[0].partners.size(); ++step) {
    const std::vector<std::set<int>> before = partial;
    for (int r = 0; r < size; ++r) {
      const DoublingSchedule& mine = schedules[static_cast<std::size_t>(r)];
      if (mine.hands_to >= 0) continue;
      const int partner = mine.partners[step];
      EXPECT_EQ(schedules[static_cast<std::size_t>(partner)].partners[step], r) << "size " << size;
      partial[static_cast<std::size_t>(r)].insert(before[static_cast<std::size_t>(partner)].begin(),
                                                  before[static_cast<std::size_t>(partner)].end());
    }
  }
  for (int r = 0; r < size; ++r) {
    const int to = schedules[static_cast<std::size_t>(r)].hands_to;
    if (to >= 0) partial[static_cast<std::size_t>(r)] = partial[static_cast<std::size_t>(to)];
  }
  return partial;
}

TEST(RecursiveDoubling, EveryRankEndsWithEveryRanksMessage) {
  for (int size = 1; size <= 70; ++size) {
    std::set<int> everyone;
    for (int r = 0; r < size; ++r) everyone.insert(r);
    const std::vector<std::set<int>> results = replay(size);
    for (int r = 0; r < size; ++r)
      EXPECT_EQ(results[static_cast<std::size_t>(r)], everyone) << "rank " << r << " of " << size;
  }
}

TEST(RecursiveDoubling, StepsGrowWithTheLogarithmOfTheWorld) {
  EXPECT_EQ(doubling_schedule(0, 1).partners.size(), 0u);
  EXPECT_EQ(doubling_schedule(0, 8).partners.size(), 3u);
  EXPECT_EQ(doubling_schedule(5, 1024).partners.size(), 10u);
  EXPECT_EQ(doubling_schedule(0, 1000).partners.size(), 9u);  // 512 ranks double, 488 hand theirs in
  EXPECT_EQ(doubling_schedule(600, 1000).hands_to, 88);
  EXPECT_EQ(doubling_schedule(88, 1000).handed_from, 600);
}

}  // namespace
}  // namespace dtrain::runtime
