// Negotiation messages through shared memory: ranks are threads of this process mapping one
// segment (a forked child where a rank must die).
#include "runtime/transport/shm/shm_control.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/dtrain.h"

namespace dtrain::runtime {
namespace {

std::string control_segment_name(const std::string& what) {
  return std::string(SharedSegment::kNamePrefix) + std::to_string(getpid()) + "-test-control-" + what;
}

std::vector<std::unique_ptr<ShmControl>> map_ranks(int ranks, const std::string& name,
                                                   std::chrono::milliseconds timeout) {
  SharedSegment created = SharedSegment::create(name, ShmControl::segment_bytes(ranks));
  ShmControl::format(created, ranks);
  std::vector<std::unique_ptr<ShmControl>> controls;
  for (int r = 0; r < ranks; ++r) {
    SharedSegment segment = r == 0 ? std::move(created) : SharedSegment::open(name, ShmControl::segment_bytes(ranks));
    controls.push_back(std::make_unique<ShmControl>(std::move(segment), r, ranks, timeout));
  }
  return controls;
}

void on_every_rank(std::vector<std::unique_ptr<ShmControl>>& controls,
                   const std::function<void(int, ShmControl&)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < static_cast<int>(controls.size()); ++r) threads.emplace_back([&, r] { body(r, *controls[r]); });
  for (auto& t : threads) t.join();
}

// Rank r's message of round k: its length runs from empty to several mailboxes.
std::vector<char> message_of(int r, int round) {
  const std::size_t lengths[] = {
      0, 1, 100, ShmControl::kMailboxBytes, ShmControl::kMailboxBytes + 1, 3 * ShmControl::kMailboxBytes + 17};
  std::vector<char> message(lengths[(r + round) % 6]);
  for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>((i * 31 + r * 7 + round) % 251);
  return message;
}

TEST(ShmControl, GatherAndBroadcastMessagesOfEveryLengthRoundAfterRound) {
  for (int ranks : {2, 3}) {
    auto controls = map_ranks(ranks, control_segment_name("rounds"), std::chrono::seconds(30));
    on_every_rank(controls, [&](int r, ShmControl& control) {
      for (int round = 0; round < 40; ++round) {
        const auto gathered = control.gather_to_coordinator(message_of(r, round));
        if (r == 0) {
          ASSERT_EQ(gathered.size(), static_cast<std::size_t>(ranks));
          for (int peer = 0; peer < ranks; ++peer) ASSERT_EQ(gathered[peer], message_of(peer, round)) << peer;
        } else {
          ASSERT_TRUE(gathered.empty());
        }
        const auto plan = control.broadcast_from_coordinator(r == 0 ? message_of(9, round) : std::vector<char>{});
        ASSERT_EQ(plan, message_of(9, round)) << "rank " << r << " round " << round;
      }
    });
  }
}

// Every rank's summary on every rank, round after round with lengths up to a slot; ranks
// run ahead of each other by up to a round, and rounds interleave with gathers.
TEST(ShmControl, ExchangeGivesEveryRankEveryMessageRoundAfterRound) {
  const auto summary_of = [](int r, int round) {
    std::vector<char> message((r * 131 + round * 17) % (ShmControl::kSlotBytes + 1));
    for (std::size_t i = 0; i < message.size(); ++i) message[i] = static_cast<char>((i * 13 + r * 5 + round) % 251);
    return message;
  };
  for (int ranks : {1, 2, 3, 4}) {
    auto controls = map_ranks(ranks, control_segment_name("exchange"), std::chrono::seconds(30));
    on_every_rank(controls, [&](int r, ShmControl& control) {
      for (int round = 0; round < 500; ++round) {
        const auto all = control.exchange(summary_of(r, round));
        ASSERT_EQ(all.size(), static_cast<std::size_t>(ranks));
        for (int peer = 0; peer < ranks; ++peer) {
          ASSERT_EQ(all[peer], summary_of(peer, round)) << "rank " << r << " round " << round << " peer " << peer;
        }
        if (round % 50 == 0) control.gather_to_coordinator(message_of(r, round));
      }
    });
  }
}

TEST(ShmControl, AnExchangeLongerThanASlotIsAnError) {
  auto controls = map_ranks(1, control_segment_name("long"), std::chrono::seconds(1));
  try {
    controls[0]->exchange(std::vector<char>(ShmControl::kSlotBytes + 1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the 4096 bytes of a shared-memory slot"), std::string::npos)
        << e.what();
  }
}

TEST(ShmControl, APeerSilentInAnExchangeIsNamedAfterTheTimeout) {
  auto controls = map_ranks(3, control_segment_name("silent-exchange"), std::chrono::seconds(1));
  try {
    controls[0]->exchange({'x'});  // ranks 1 and 2 live but never write
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no negotiation message from rank 1 within 1 s"), std::string::npos)
        << e.what();
  }
}

TEST(ShmControl, ASilentPeerIsNamedAfterTheTimeout) {
  auto controls = map_ranks(2, control_segment_name("silent"), std::chrono::seconds(1));
  try {
    controls[0]->gather_to_coordinator({});  // rank 1 lives but never sends
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no negotiation message from rank 1 within 1 s"), std::string::npos)
        << e.what();
  }
}

TEST(ShmControl, APeerThatExitedIsNamedWithoutWaitingOutTheTimeout) {
  const std::string name = control_segment_name("dead");
  SharedSegment created = SharedSegment::create(name, ShmControl::segment_bytes(2));
  ShmControl::format(created, 2);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ShmControl rank1(SharedSegment::open(name, ShmControl::segment_bytes(2)), 1, 2, std::chrono::seconds(300));
    _exit(0);  // leaves without sending its report
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ShmControl rank0(std::move(created), 0, 2, std::chrono::seconds(300));
  try {
    rank0.gather_to_coordinator({});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 (pid " + std::to_string(child) + ") exited during negotiation"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace dtrain::runtime
