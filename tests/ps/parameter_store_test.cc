#include "ps/parameter_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace dtrain::ps {
namespace {

std::string bytes_of(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

struct PushResult {
  bool done = false;
  grpc::Status status;
  std::int64_t version = 0;
  std::vector<float> value;
};

ParameterStore::PushDone recorder(PushResult& result) {
  return [&result](const grpc::Status& status, std::int64_t version, const std::vector<float>& value) {
    result.done = true;
    result.status = status;
    result.version = version;
    result.value = value;
  };
}

const UpdateRuleSpec kPlainSgd{};  // lr * gradient, no momentum

// Registers `workers` workers holding one piece "w#0" of two elements, initialised to {1, 2}.
void register_all(ParameterStore& store, int workers) {
  for (int w = 0; w < workers; ++w) {
    bool ok = false;
    store.register_worker(w, workers, {{"w#0", 2}}, kPlainSgd,
                          w == 0 ? std::vector<std::string>{bytes_of({1, 2})} : std::vector<std::string>{}, 0,
                          [&ok](const grpc::Status& s, std::int64_t) { ok = s.ok(); });
    ASSERT_TRUE(ok) << "worker " << w;
  }
}

TEST(ParameterStore, OthersRegistrationCompletesOnceTheChiefHasInitialised) {
  ParameterStore store({});
  bool worker1_done = false;
  std::int64_t start = -1;
  store.register_worker(1, 2, {{"w#0", 2}}, kPlainSgd, {}, 0, [&](const grpc::Status& s, std::int64_t step) {
    worker1_done = s.ok();
    start = step;
  });
  EXPECT_FALSE(worker1_done);
  bool chief_done = false;
  store.register_worker(0, 2, {{"w#0", 2}}, kPlainSgd, {bytes_of({1, 2})}, 40,
                        [&](const grpc::Status& s, std::int64_t) { chief_done = s.ok(); });
  EXPECT_TRUE(chief_done);
  EXPECT_TRUE(worker1_done);
  EXPECT_EQ(start, 40);  // the chief's resume step reaches everyone
}

TEST(ParameterStore, WorkersDeclaringAnotherModelAreRefusedNamingThePiece) {
  ParameterStore store({});
  register_all(store, 1);
  ParameterStore two({});
  bool ok = true;
  std::string message;
  two.register_worker(0, 2, {{"w#0", 2}}, kPlainSgd, {bytes_of({1, 2})}, 0, [](const grpc::Status&, std::int64_t) {});
  two.register_worker(1, 2, {{"w#0", 3}}, kPlainSgd, {}, 0, [&](const grpc::Status& s, std::int64_t) {
    ok = s.ok();
    message = s.error_message();
  });
  EXPECT_FALSE(ok);
  EXPECT_NE(message.find("'w#0' (3 elements)"), std::string::npos) << message;
  UpdateRuleSpec adam;
  adam.kind = UpdateRuleSpec::Kind::kAdam;
  two.register_worker(1, 2, {{"w#0", 2}}, adam, {}, 0, [&](const grpc::Status& s, std::int64_t) {
    ok = s.ok();
    message = s.error_message();
  });
  EXPECT_FALSE(ok);
  EXPECT_NE(message.find("adam"), std::string::npos) << message;
}

TEST(ParameterStore, AsyncAppliesEachPushAtOnce) {
  ParameterStore store({});
  register_all(store, 2);
  PushResult a, b;
  store.push(1, 0, 0.5, "w#0", bytes_of({2, 2}), recorder(a));
  ASSERT_TRUE(a.done);
  ASSERT_TRUE(a.status.ok()) << a.status.error_message();
  EXPECT_EQ(a.version, 1);
  EXPECT_EQ(a.value, (std::vector<float>{0, 1}));
  store.push(0, 0, 0.5, "w#0", bytes_of({-2, 0}), recorder(b));
  EXPECT_EQ(b.version, 2);
  EXPECT_EQ(b.value, (std::vector<float>{1, 1}));
}

TEST(ParameterStore, SyncAveragesAStepOverAllWorkersBeforeAnswering) {
  ParameterStoreOptions options;
  options.mode = UpdateMode::kSync;
  ParameterStore store(options);
  register_all(store, 2);
  PushResult a, b;
  store.push(0, 0, 1.0, "w#0", bytes_of({2, 4}), recorder(a));
  EXPECT_FALSE(a.done) << "a sync push must wait for the other worker";
  store.push(1, 0, 1.0, "w#0", bytes_of({0, 2}), recorder(b));
  ASSERT_TRUE(a.done && b.done);
  EXPECT_EQ(a.value, (std::vector<float>{0, -1}));  // {1, 2} - mean({2, 4}, {0, 2})
  EXPECT_EQ(b.value, a.value);
  EXPECT_EQ(a.version, 1);
}

// Float addition is not associative: (1e8 + 1) - 1e8 is 0 in float32, (1e8 - 1e8) + 1 is 1.
// Whatever order the pushes arrive in, the round sums them in worker order, as allreduce
// would on every run.
TEST(ParameterStore, SyncRoundsSumInWorkerOrderWhateverTheArrivalOrder) {
  const std::vector<std::vector<float>> gradients = {{1e8f, 3}, {-1e8f, 6}, {1, 9}};
  std::vector<float> expected = {1, 2};
  for (size_t i = 0; i < expected.size(); ++i) {
    float sum = 0;
    for (const auto& g : gradients) sum += g[i];
    expected[i] -= sum * (1.0f / 3.0f);
  }
  std::vector<int> order = {0, 1, 2};
  do {
    ParameterStoreOptions options;
    options.mode = UpdateMode::kSync;
    ParameterStore store(options);
    register_all(store, 3);
    std::vector<PushResult> results(3);
    for (int worker : order) {
      store.push(worker, 0, 1.0, "w#0", bytes_of(gradients[static_cast<size_t>(worker)]),
                 recorder(results[static_cast<size_t>(worker)]));
    }
    for (const auto& result : results) {
      ASSERT_TRUE(result.done && result.status.ok());
      EXPECT_EQ(result.value, expected) << "arrival order " << order[0] << order[1] << order[2];
    }
  } while (std::next_permutation(order.begin(), order.end()));
  EXPECT_EQ(expected[0], 1 - 1.0f / 3.0f) << "the gradients no longer exercise the summation order";
}

TEST(ParameterStore, StalenessBoundHoldsAWorkerTooFarAhead) {
  ParameterStoreOptions options;
  options.staleness = 1;
  ParameterStore store(options);
  register_all(store, 2);
  PushResult s0, s1, s2, slow0, slow1;
  store.push(0, 0, 1.0, "w#0", bytes_of({0, 0}), recorder(s0));
  EXPECT_TRUE(s0.done) << "step 0 is 1 ahead of worker 1 (no push yet): within the bound";
  store.push(0, 1, 1.0, "w#0", bytes_of({1, 1}), recorder(s1));
  EXPECT_FALSE(s1.done) << "step 1 is 2 ahead of worker 1";
  store.push(1, 0, 1.0, "w#0", bytes_of({0, 0}), recorder(slow0));
  EXPECT_TRUE(slow0.done);
  ASSERT_TRUE(s1.done) << "worker 1 reached step 0: step 1 may go";
  EXPECT_TRUE(s1.status.ok());
  EXPECT_EQ(s1.value, (std::vector<float>{0, 1}));  // the held gradient was applied when released
  store.push(0, 2, 1.0, "w#0", bytes_of({0, 0}), recorder(s2));
  EXPECT_FALSE(s2.done);
  store.push(1, 1, 1.0, "w#0", bytes_of({0, 0}), recorder(slow1));
  EXPECT_TRUE(s2.done);
}

TEST(ParameterStore, ASilentWorkerIsDroppedAndTheOthersGoOn) {
  ParameterStoreOptions options;
  options.mode = UpdateMode::kSync;
  options.worker_timeout_s = 1;
  ParameterStore store(options);
  register_all(store, 2);
  store.check_liveness();
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  PushResult waiting;
  store.push(0, 0, 1.0, "w#0", bytes_of({2, 2}), recorder(waiting));  // worker 0 is alive, worker 1 silent
  ASSERT_FALSE(waiting.done);
  store.check_liveness();
  ASSERT_TRUE(waiting.done) << "the round completes with the workers left";
  EXPECT_EQ(waiting.value, (std::vector<float>{-1, 0}));
  PushResult next;
  store.push(0, 1, 1.0, "w#0", bytes_of({1, 1}), recorder(next));
  EXPECT_TRUE(next.done && next.status.ok()) << "worker 0 goes on alone";
  PushResult late;
  store.push(1, 0, 1.0, "w#0", bytes_of({0, 0}), recorder(late));
  ASSERT_TRUE(late.done);
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(late.status.error_message().find("dropped worker 1"), std::string::npos) << late.status.error_message();
}

TEST(ParameterStore, AWorkerThatNeverRegistersIsDroppedAfterTheRegistrationGrace) {
  ParameterStoreOptions options;
  options.mode = UpdateMode::kSync;
  options.worker_timeout_s = 10;
  ParameterStore store(options);
  bool ok = false;
  store.register_worker(0, 2, {{"w#0", 2}}, kPlainSgd, {bytes_of({1, 2})}, 0,
                        [&ok](const grpc::Status& s, std::int64_t) { ok = s.ok(); });
  ASSERT_TRUE(ok);
  PushResult waiting;
  store.push(0, 0, 1.0, "w#0", bytes_of({2, 2}), recorder(waiting));
  // 30 s on: past worker 0's heartbeat timeout (it is dropped), within worker 1's registration grace.
  store.check_liveness(ParameterStore::Clock::now() + std::chrono::seconds(30));
  EXPECT_FALSE(waiting.done) << "a worker still starting up gets a minute, not the heartbeat timeout";
  store.check_liveness(ParameterStore::Clock::now() + std::chrono::seconds(61));
  ASSERT_TRUE(waiting.done);
  std::string message;
  store.register_worker(1, 2, {{"w#0", 2}}, kPlainSgd, {}, 0,
                        [&message](const grpc::Status& s, std::int64_t) { message = s.error_message(); });
  EXPECT_NE(message.find("registered after parameter server 0 gave up waiting for it"), std::string::npos) << message;
}

TEST(ParameterStore, ALeavingWorkerNoLongerHoldsSyncRounds) {
  ParameterStoreOptions options;
  options.mode = UpdateMode::kSync;
  ParameterStore store(options);
  register_all(store, 2);
  PushResult waiting;
  store.push(0, 0, 1.0, "w#0", bytes_of({2, 2}), recorder(waiting));
  ASSERT_FALSE(waiting.done);
  int live_workers = 0;
  ASSERT_TRUE(store.heartbeat(1, true, live_workers).ok());
  EXPECT_TRUE(waiting.done);
  EXPECT_EQ(live_workers, 1);
}

TEST(ParameterStore, BadPushesAreRefusedNamingWhatIsWrong) {
  ParameterStore store({});
  register_all(store, 1);
  PushResult unknown, short_gradient;
  store.push(0, 0, 1.0, "nope#0", bytes_of({1, 1}), recorder(unknown));
  EXPECT_NE(unknown.status.error_message().find("no piece 'nope#0'"), std::string::npos);
  store.push(0, 0, 1.0, "w#0", bytes_of({1}), recorder(short_gradient));
  EXPECT_NE(short_gradient.status.error_message().find("has 4 bytes, expected 8"), std::string::npos)
      << short_gradient.status.error_message();
}

TEST(ParameterStore, ShutdownAnswersEveryWaitingRequest) {
  ParameterStoreOptions options;
  options.mode = UpdateMode::kSync;
  ParameterStore store(options);
  register_all(store, 2);
  PushResult waiting;
  store.push(0, 0, 1.0, "w#0", bytes_of({2, 2}), recorder(waiting));
  store.abort_waiting({grpc::StatusCode::UNAVAILABLE, "shutting down"});
  ASSERT_TRUE(waiting.done);
  EXPECT_EQ(waiting.status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace dtrain::ps
