// The schedule the shortcut's reduction follows across hosts: whatever the world size, every
// rank's message reaches every rank's result, and a rank takes about log2(n) steps.
#include "runtime/transport/recursive_doubling.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace dtrain::runtime {
namespace {

// The schedule pairs ranks both ways: whoever hands its message in is expected by its partner,
// and in every step a rank's partner has it as its partner too.
TEST(RecursiveDoubling, PartnersAgree) {
  for (int size = 1; size <= 70; ++size) {
    std::vector<DoublingSchedule> schedules;
    for (int r = 0; r < size; ++r) schedules.push_back(doubling_schedule(r, size));
    for (int r = 0; r < size; ++r) {
      const DoublingSchedule& mine = schedules[static_cast<std::size_t>(r)];
      if (mine.hands_to >= 0) {
        EXPECT_EQ(schedules[static_cast<std::size_t>(mine.hands_to)].handed_from, r) << "size " << size;
        continue;
      }
      for (std::size_t step = 0; step < mine.partners.size(); ++step) {
        EXPECT_EQ(schedules[static_cast<std::size_t>(mine.partners[step])].partners[step], r) << "size " << size;
      }
    }
  }
}

// Replays the schedule with sets of ranks as messages (union: associative, commutative, exact).
std::vector<std::set<int>> replay(int size) {
  std::vector<std::set<int>> messages(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) messages[static_cast<std::size_t>(r)] = {r};
  return replay_doubling(std::move(messages), [](int, std::set<int>& into, const std::set<int>& theirs) {
    into.insert(theirs.begin(), theirs.end());
  });
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
