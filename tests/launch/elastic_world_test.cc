// ElasticWorld's rules (src/launch/elastic_world.h), driven with a clock of its own.
#include "launch/elastic_world.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace dtrain::launch {
namespace {

using Clock = ElasticWorld::Clock;
using namespace std::chrono_literals;

constexpr int kExitedZero = 0;
constexpr int kExitedOne = 1 << 8;  // a wait status: exit code 1
constexpr int kKilled = SIGKILL;    // a wait status: killed by SIGKILL

ElasticSettings settings(int min_np, int max_np) {
  ElasticSettings s;
  s.min_np = min_np;
  s.max_np = max_np;
  s.start_timeout_s = 30;
  s.arrival_timeout_s = 10;
  s.elastic_timeout_s = 60;
  s.host_cooldown_s = 100;
  s.reset_limit = 5;
  return s;
}

std::vector<HostSlots> three_hosts() { return {{"a", 1}, {"b", 1}, {"c", 1}}; }

// Starts a worker on every free slot and returns their numbers.
std::vector<int> start_all(ElasticWorld& world, Clock::time_point now) {
  std::vector<int> ids;
  for (const auto& host : world.hosts_to_fill(now)) ids.push_back(world.worker_started(host, false));
  return ids;
}

std::vector<int> members(const rendezvous::ElasticRound& round) {
  std::vector<int> ids;
  for (const auto& m : round.members) ids.push_back(m.worker);
  return ids;
}

TEST(ElasticWorld, FirstRoundWaitsForEveryStartedWorker) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(2, 3), three_hosts(), t0);
  EXPECT_EQ(start_all(world, t0), (std::vector<int>{0, 1, 2}));
  world.worker_asked(0, 0);
  world.worker_asked(2, 0);
  EXPECT_FALSE(world.decide(t0 + 1s).round);  // worker 1 is still starting
  world.worker_asked(1, 0);
  const auto decision = world.decide(t0 + 2s);
  ASSERT_TRUE(decision.round);
  EXPECT_EQ(decision.round->number, 1);
  EXPECT_EQ(members(*decision.round), (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(world.hosts_to_fill(t0 + 2s).empty());  // max_np workers live
}

TEST(ElasticWorld, KilledWorkerIsLostItsHostCoolsDownAndSurvivorsKeepTheirOrder) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(2, 3), three_hosts(), t0);
  start_all(world, t0);
  for (int id : {0, 1, 2}) world.worker_asked(id, 0);
  ASSERT_TRUE(world.decide(t0).round);

  EXPECT_EQ(world.worker_ended(0, kKilled, t0 + 5s), ElasticWorld::Ending::kLost);
  EXPECT_EQ(world.losses().back(), "host a: worker 0 was killed by signal 9 (SIGKILL)");
  world.worker_asked(2, 1);
  world.worker_asked(1, 1);
  const auto decision = world.decide(t0 + 6s);
  ASSERT_TRUE(decision.round);
  EXPECT_EQ(members(*decision.round), (std::vector<int>{1, 2}));  // the lowest survivor is rank 0
  EXPECT_TRUE(world.hosts_to_fill(t0 + 50s).empty()) << "host a is cooling down";
  EXPECT_EQ(world.hosts_to_fill(t0 + 106s), (std::vector<std::string>{"a"})) << "tried again after the cool-down";
}

TEST(ElasticWorld, MemberThatNeverAsksIsGivenUpOnAfterTheArrivalTimeout) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(2, 3), three_hosts(), t0);
  start_all(world, t0);
  for (int id : {0, 1, 2}) world.worker_asked(id, 0);
  ASSERT_TRUE(world.decide(t0).round);
  world.worker_asked(0, 1);  // survivors saw a peer time out; worker 1 is stalled
  world.worker_asked(2, 1);
  EXPECT_FALSE(world.decide(t0 + 1s).round);  // the window opens when the request is seen
  EXPECT_FALSE(world.decide(t0 + 10s).round);
  const auto decision = world.decide(t0 + 12s);
  EXPECT_EQ(decision.lost, (std::vector<int>{1}));
  ASSERT_TRUE(decision.round);
  EXPECT_EQ(members(*decision.round), (std::vector<int>{0, 2}));
  EXPECT_EQ(world.losses().back(),
            "host b: worker 1 did not reach round 2 within 10 s (stalled, or its host unreachable)");
  // Its process, killed by the driver, ends as a loss already counted.
  EXPECT_EQ(world.worker_ended(1, kKilled, t0 + 12s), ElasticWorld::Ending::kLost);
  EXPECT_EQ(world.losses().size(), 1u);
}

// A survivor whose Gloo send towards the dead member waits out its DTRAIN_TIMEOUT_S asks one
// timeout late; it is a survivor, not a stalled worker.
TEST(ElasticWorld, AfterAMembersDeathTheOthersHaveTwoArrivalTimeoutsToAsk) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(2, 3), three_hosts(), t0);
  start_all(world, t0);
  for (int id : {0, 1, 2}) world.worker_asked(id, 0);
  ASSERT_TRUE(world.decide(t0).round);
  EXPECT_EQ(world.worker_ended(1, kKilled, t0 + 1s), ElasticWorld::Ending::kLost);
  world.worker_asked(2, 1);
  EXPECT_FALSE(world.decide(t0 + 1s).round);
  EXPECT_FALSE(world.decide(t0 + 15s).round) << "worker 0 may still be in a send that times out";
  world.worker_asked(0, 1);
  const auto decision = world.decide(t0 + 16s);
  EXPECT_TRUE(decision.lost.empty());
  ASSERT_TRUE(decision.round);
  EXPECT_EQ(members(*decision.round), (std::vector<int>{0, 2}));
}

TEST(ElasticWorld, AfterAMembersDeathOneThatNeverAsksIsGivenUpOnAfterTwoArrivalTimeouts) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(1, 3), three_hosts(), t0);
  start_all(world, t0);
  for (int id : {0, 1, 2}) world.worker_asked(id, 0);
  ASSERT_TRUE(world.decide(t0).round);
  world.worker_ended(1, kKilled, t0 + 1s);
  world.worker_asked(0, 1);
  EXPECT_FALSE(world.decide(t0 + 1s).round);
  EXPECT_TRUE(world.decide(t0 + 20s).lost.empty());
  const auto decision = world.decide(t0 + 22s);
  EXPECT_EQ(decision.lost, (std::vector<int>{2}));
  ASSERT_TRUE(decision.round);
  EXPECT_EQ(members(*decision.round), (std::vector<int>{0}));
  EXPECT_EQ(world.losses().back(),
            "host c: worker 2 did not reach round 2 within 20 s (stalled, or its host unreachable)");
}

TEST(ElasticWorld, NewWorkersWaitUntilTheMembersAskAtACommit) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(1, 3), {{"a", 1}, {"b", 1}}, t0);
  start_all(world, t0);
  world.worker_asked(0, 0);
  world.worker_asked(1, 0);
  ASSERT_TRUE(world.decide(t0).round);
  world.set_discovered_hosts({{"c", 1}});
  ASSERT_EQ(world.hosts_to_fill(t0 + 1s), (std::vector<std::string>{"c"}));
  EXPECT_EQ(world.worker_started("c", false), 2);
  EXPECT_EQ(world.decide(t0 + 2s).waiting_to_join, 0) << "not waiting before it asks";
  world.worker_asked(2, 0);
  const auto waiting = world.decide(t0 + 3s);
  EXPECT_FALSE(waiting.round);
  EXPECT_EQ(waiting.waiting_to_join, 1);
  world.worker_asked(0, 1);
  world.worker_asked(1, 1);
  const auto grown = world.decide(t0 + 4s);
  ASSERT_TRUE(grown.round);
  EXPECT_EQ(members(*grown.round), (std::vector<int>{0, 1, 2}));
}

TEST(ElasticWorld, BelowMinimumFailsAfterTheElasticTimeoutNamingTheLosses) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(3, 3), three_hosts(), t0);
  start_all(world, t0);
  for (int id : {0, 1, 2}) world.worker_asked(id, 0);
  ASSERT_TRUE(world.decide(t0).round);
  world.worker_ended(1, kKilled, t0 + 1s);
  world.worker_asked(0, 1);
  world.worker_asked(2, 1);
  EXPECT_FALSE(world.decide(t0 + 2s).failure);
  EXPECT_FALSE(world.decide(t0 + 61s).failure);
  const auto decision = world.decide(t0 + 63s);
  ASSERT_TRUE(decision.failure);
  EXPECT_EQ(*decision.failure,
            "elastic: 2 workers alive, below --min-np 3 for more than 60 s (lost: host b: worker 1 was killed by "
            "signal 9 (SIGKILL))");
  EXPECT_TRUE(world.finishing());
}

TEST(ElasticWorld, ProgramErrorsAndSuccessAreNotLosses) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(1, 3), three_hosts(), t0);
  start_all(world, t0);
  EXPECT_EQ(world.worker_ended(0, kExitedOne, t0), ElasticWorld::Ending::kFatal);
  EXPECT_EQ(world.worker_ended(1, kExitedZero, t0), ElasticWorld::Ending::kFinished);
  EXPECT_TRUE(world.finishing());
  EXPECT_TRUE(world.hosts_to_fill(t0 + 1000s).empty()) << "nothing is started once the job finishes";
  world.worker_asked(2, 0);
  const auto decision = world.decide(t0 + 1s);
  ASSERT_TRUE(decision.round);
  EXPECT_FALSE(decision.round->closed_reason.empty()) << "a worker waiting for a world is told there is none";
}

TEST(ElasticWorld, RemoteWorkerWhoseSshLostTheHostIsLost) {
  const auto t0 = Clock::now();
  ElasticWorld world(settings(1, 2), {{"remote", 2}}, t0);
  const int local_like = world.worker_started("remote", false);
  const int remote = world.worker_started("remote", true);
  EXPECT_EQ(world.worker_ended(remote, 255 << 8, t0), ElasticWorld::Ending::kLost);
  EXPECT_EQ(world.losses().back(), "host remote: worker 1 lost its ssh connection");
  EXPECT_EQ(world.worker_ended(local_like, 255 << 8, t0), ElasticWorld::Ending::kFatal);
  const int again = world.worker_started("remote", true);
  EXPECT_EQ(world.worker_ended(again, (128 + 9) << 8, t0), ElasticWorld::Ending::kLost);
  EXPECT_EQ(world.losses().back(), "host remote: worker 2 was killed by signal 9 (SIGKILL)");
}

TEST(ElasticWorld, ResetsBeyondTheLimitFailTheJob) {
  auto t = Clock::now();
  ElasticSettings s = settings(1, 2);
  s.reset_limit = 2;
  s.host_cooldown_s = 0;
  ElasticWorld world(s, {{"a", 1}, {"b", 1}}, t);
  start_all(world, t);
  world.worker_asked(0, 0);
  world.worker_asked(1, 0);
  ASSERT_TRUE(world.decide(t).round);
  for (int reset = 1; reset <= 3; ++reset) {
    t += 1s;
    world.worker_asked(0, reset);
    world.worker_asked(1, reset);
    const auto decision = world.decide(t);
    if (reset <= 2) {
      ASSERT_TRUE(decision.round) << reset;
    } else {
      ASSERT_TRUE(decision.failure);
      EXPECT_NE(decision.failure->find("re-formed 2 times, the --reset-limit"), std::string::npos) << *decision.failure;
    }
  }
}

}  // namespace
}  // namespace dtrain::launch
