// The bounded queue in front of the inference workers: concurrency up to the
// worker count, immediate 503 when full, errors carried to the caller, a
// shutdown that finishes what was accepted, and batches of what is waiting.
// No test depends on timing: a gate holds the worker while requests queue.
#include "serving/inference_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace dtrain::serving {
namespace {

using namespace std::chrono_literals;

// Blocks each invocation until released; counts how many run at once.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int running = 0, most_running = 0, finished = 0;
};

class GatedEndpoint : public Endpoint {
 public:
  explicit GatedEndpoint(Gate& gate) : gate_(gate) {}
  InvocationResponse invoke(const InvocationRequest& request) override {
    std::unique_lock<std::mutex> lock(gate_.mutex);
    gate_.most_running = std::max(gate_.most_running, ++gate_.running);
    gate_.changed.notify_all();
    gate_.changed.wait(lock, [&] { return gate_.open; });
    --gate_.running;
    ++gate_.finished;
    if (request.body == "fail") throw InvocationError(400, "bad body");
    if (request.body == "crash") throw std::runtime_error("model broke");
    return {200, "text/plain", "answer to " + request.body};
  }

 private:
  Gate& gate_;
};

std::vector<std::unique_ptr<Endpoint>> gated(Gate& gate, int n) {
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  for (int i = 0; i < n; ++i) endpoints.push_back(std::make_unique<GatedEndpoint>(gate));
  return endpoints;
}

void wait_running(Gate& gate, int n) {
  std::unique_lock<std::mutex> lock(gate.mutex);
  ASSERT_TRUE(gate.changed.wait_for(lock, 10s, [&] { return gate.running == n; })) << gate.running;
}

void release(Gate& gate) {
  std::lock_guard<std::mutex> lock(gate.mutex);
  gate.open = true;
  gate.changed.notify_all();
}

InvocationRequest request(const std::string& body) { return {"text/plain", body, {}}; }

// The answer is the exception `Expected` with this message, not a response.
template <typename Expected>
void expect_failure(std::future<InvocationResponse>& answer, const std::string& message) {
  try {
    answer.get();
    ADD_FAILURE() << "answered where '" << message << "' was expected";
  } catch (const Expected& e) {
    EXPECT_EQ(e.what(), message);
  }
}

TEST(InferenceQueue, RunsAsManyAtOnceAsWorkersAndRefusesWhenFull) {
  Gate gate;
  InferenceQueue queue(gated(gate, 3), 2);
  std::vector<std::future<InvocationResponse>> answers;
  // One at a time: capacity counts waiting requests, and a worker may not
  // have taken the previous one yet.
  for (int i = 0; i < 3; ++i) {
    answers.push_back(queue.submit(request(std::to_string(i))));
    wait_running(gate, i + 1);
  }
  answers.push_back(queue.submit(request("3")));
  answers.push_back(queue.submit(request("4")));
  EXPECT_EQ(queue.waiting(), 2u);
  EXPECT_EQ(queue.running(), 3u);
  try {
    queue.submit(request("5"));
    FAIL() << "a full queue accepted a request";
  } catch (const InvocationError& e) {
    EXPECT_EQ(e.status(), 503);
    EXPECT_NE(std::string(e.what()).find("2 requests already wait"), std::string::npos) << e.what();
  }
  release(gate);
  for (size_t i = 0; i < answers.size(); ++i) EXPECT_EQ(answers[i].get().body, "answer to " + std::to_string(i));
  EXPECT_EQ(gate.most_running, 3);
}

TEST(InferenceQueue, CarriesEndpointErrorsToTheCaller) {
  Gate gate;
  gate.open = true;
  InferenceQueue queue(gated(gate, 1), 4);
  auto failed = queue.submit(request("fail"));
  auto crashed = queue.submit(request("crash"));
  auto fine = queue.submit(request("ok"));
  try {
    failed.get();
    FAIL();
  } catch (const InvocationError& e) {
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_THROW(crashed.get(), std::runtime_error);
  EXPECT_EQ(fine.get().body, "answer to ok");  // the worker survived both
}

TEST(InferenceQueue, ShutdownFinishesAcceptedRequestsAndRefusesNewOnes) {
  Gate gate;
  auto queue = std::make_unique<InferenceQueue>(gated(gate, 1), 8);
  std::vector<std::future<InvocationResponse>> answers;
  for (int i = 0; i < 5; ++i) answers.push_back(queue->submit(request(std::to_string(i))));
  wait_running(gate, 1);
  std::thread closer([&] { queue->shutdown(); });
  std::this_thread::sleep_for(50ms);
  EXPECT_THROW(queue->submit(request("late")), InvocationError);
  release(gate);
  closer.join();
  EXPECT_EQ(gate.finished, 5);
  for (size_t i = 0; i < answers.size(); ++i) EXPECT_EQ(answers[i].get().body, "answer to " + std::to_string(i));
}

// Records each endpoint call as the bodies it was given: invoke alone is a
// call of one; invoke_batch is one call of several (answered through the
// default implementation, which runs invoke on each).
class RecordingEndpoint : public GatedEndpoint {
 public:
  RecordingEndpoint(Gate& gate, std::vector<std::vector<std::string>>& calls) : GatedEndpoint(gate), calls_(calls) {}
  InvocationResponse invoke(const InvocationRequest& request) override {
    if (!in_batch_) calls_.push_back({request.body});
    return GatedEndpoint::invoke(request);
  }
  std::vector<InvocationOutcome> invoke_batch(const std::vector<InvocationRequest>& requests) override {
    std::vector<std::string> bodies;
    for (const InvocationRequest& request : requests) bodies.push_back(request.body);
    calls_.push_back(bodies);
    in_batch_ = true;
    std::vector<InvocationOutcome> outcomes = Endpoint::invoke_batch(requests);
    in_batch_ = false;
    return outcomes;
  }

 private:
  std::vector<std::vector<std::string>>& calls_;  // one worker: no lock needed
  bool in_batch_ = false;
};

using Calls = std::vector<std::vector<std::string>>;

std::vector<std::unique_ptr<Endpoint>> recording(Gate& gate, Calls& calls) {
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  endpoints.push_back(std::make_unique<RecordingEndpoint>(gate, calls));
  return endpoints;
}

BatchOptions batches_of(size_t n, std::chrono::milliseconds timeout = 0ms) {
  BatchOptions options;
  options.max_batch = n;
  options.batch_timeout = timeout;
  return options;
}

// Submits "0" and waits until the worker holds it at the gate, then queues
// `more` requests named "1", "2", ... behind it.
std::vector<std::future<InvocationResponse>> hold_one_and_queue(InferenceQueue& queue, Gate& gate, int more) {
  std::vector<std::future<InvocationResponse>> answers;
  answers.push_back(queue.submit(request("0")));
  wait_running(gate, 1);
  for (int i = 1; i <= more; ++i) answers.push_back(queue.submit(request(std::to_string(i))));
  return answers;
}

TEST(InferenceQueue, ABatchTakesEveryWaitingRequestInOneCall) {
  Gate gate;
  Calls calls;
  InferenceQueue queue(recording(gate, calls), 16, batches_of(8));
  auto answers = hold_one_and_queue(queue, gate, 5);
  EXPECT_EQ(queue.waiting(), 5u);
  release(gate);
  for (size_t i = 0; i < answers.size(); ++i) EXPECT_EQ(answers[i].get().body, "answer to " + std::to_string(i));
  EXPECT_EQ(calls, (Calls{{"0"}, {"1", "2", "3", "4", "5"}}));
}

TEST(InferenceQueue, BatchesHoldAtMostMaxBatchInArrivalOrder) {
  Gate gate;
  Calls calls;
  InferenceQueue queue(recording(gate, calls), 16, batches_of(3));
  auto answers = hold_one_and_queue(queue, gate, 7);
  release(gate);
  for (size_t i = 0; i < answers.size(); ++i) EXPECT_EQ(answers[i].get().body, "answer to " + std::to_string(i));
  EXPECT_EQ(calls, (Calls{{"0"}, {"1", "2", "3"}, {"4", "5", "6"}, {"7"}}));
}

TEST(InferenceQueue, WithoutBatchingEachRequestIsItsOwnCall) {
  Gate gate;
  Calls calls;
  InferenceQueue queue(recording(gate, calls), 16);
  auto answers = hold_one_and_queue(queue, gate, 3);
  release(gate);
  for (auto& answer : answers) answer.get();
  EXPECT_EQ(calls, (Calls{{"0"}, {"1"}, {"2"}, {"3"}}));
}

TEST(InferenceQueue, EachRequestOfABatchGetsItsOwnAnswerOrError) {
  Gate gate;
  Calls calls;
  InferenceQueue queue(recording(gate, calls), 16, batches_of(4));
  std::vector<std::future<InvocationResponse>> answers;
  answers.push_back(queue.submit(request("first")));
  wait_running(gate, 1);
  for (const char* body : {"fail", "ok", "crash", "fine"}) answers.push_back(queue.submit(request(body)));
  release(gate);
  EXPECT_EQ(answers[0].get().body, "answer to first");
  try {
    answers[1].get();
    FAIL() << "the bad request was answered";
  } catch (const InvocationError& e) {
    EXPECT_EQ(e.status(), 400);
  }
  EXPECT_EQ(answers[2].get().body, "answer to ok");
  EXPECT_THROW(answers[3].get(), std::runtime_error);
  EXPECT_EQ(answers[4].get().body, "answer to fine");
  EXPECT_EQ(calls, (Calls{{"first"}, {"fail", "ok", "crash", "fine"}}));
}

// invoke_batch that fails as a whole (or miscounts): every request of that
// batch gets the error, and the worker goes on.
class BrokenBatchEndpoint : public GatedEndpoint {
 public:
  using GatedEndpoint::GatedEndpoint;
  std::vector<InvocationOutcome> invoke_batch(const std::vector<InvocationRequest>& requests) override {
    if (requests.front().body == "miscount") return {};
    throw std::runtime_error("the batch broke");
  }
};

TEST(InferenceQueue, ABatchThatFailsAsAWholeFailsEachOfItsRequests) {
  Gate gate;
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  endpoints.push_back(std::make_unique<BrokenBatchEndpoint>(gate));
  InferenceQueue queue(std::move(endpoints), 16, batches_of(2));
  std::vector<std::future<InvocationResponse>> answers;
  answers.push_back(queue.submit(request("0")));
  wait_running(gate, 1);
  for (const char* body : {"a", "b", "miscount", "c", "last"}) answers.push_back(queue.submit(request(body)));
  release(gate);
  EXPECT_EQ(answers[0].get().body, "answer to 0");
  for (int i : {1, 2}) expect_failure<std::runtime_error>(answers[i], "the batch broke");
  for (int i : {3, 4}) expect_failure<std::logic_error>(answers[i], "the endpoint answered 0 of a batch of 2 requests");
  EXPECT_EQ(answers[5].get().body, "answer to last");  // alone: invoke
}

TEST(InferenceQueue, ShutdownFinishesEveryBatch) {
  Gate gate;
  Calls calls;
  auto queue = std::make_unique<InferenceQueue>(recording(gate, calls), 16, batches_of(2));
  auto answers = hold_one_and_queue(*queue, gate, 4);
  std::thread closer([&] { queue->shutdown(); });
  release(gate);
  closer.join();
  EXPECT_THROW(queue->submit(request("late")), InvocationError);
  for (size_t i = 0; i < answers.size(); ++i) EXPECT_EQ(answers[i].get().body, "answer to " + std::to_string(i));
  EXPECT_EQ(calls, (Calls{{"0"}, {"1", "2"}, {"3", "4"}}));
}

// With a batch timeout the worker holds what it took until the batch is
// full. The timeout is an hour: the test ends only if the batch fills (or
// shutdown cuts the wait short), never by the clock.
TEST(InferenceQueue, ABatchTimeoutWaitsForTheBatchToFill) {
  Gate gate;
  gate.open = true;
  Calls calls;
  InferenceQueue queue(recording(gate, calls), 16, batches_of(3, std::chrono::hours(1)));
  std::vector<std::future<InvocationResponse>> answers;
  for (const char* body : {"a", "b", "c"}) answers.push_back(queue.submit(request(body)));
  for (auto& answer : answers) answer.get();
  EXPECT_EQ(calls, (Calls{{"a", "b", "c"}}));
}

TEST(InferenceQueue, ShutdownCutsABatchTimeoutShort) {
  Gate gate;
  gate.open = true;
  Calls calls;
  InferenceQueue queue(recording(gate, calls), 16, batches_of(3, std::chrono::hours(1)));
  auto answer = queue.submit(request("alone"));
  queue.shutdown();
  EXPECT_EQ(answer.get().body, "answer to alone");
  EXPECT_EQ(calls, (Calls{{"alone"}}));
}

TEST(Endpoint, DefaultInvokeBatchGivesEachRequestItsOwnOutcome) {
  Gate gate;
  gate.open = true;
  GatedEndpoint endpoint(gate);
  const std::vector<InvocationOutcome> outcomes = endpoint.invoke_batch({request("x"), request("fail"), request("y")});
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_FALSE(outcomes[0].error);
  EXPECT_EQ(outcomes[0].response.body, "answer to x");
  ASSERT_TRUE(outcomes[1].error);
  EXPECT_THROW(std::rethrow_exception(outcomes[1].error), InvocationError);
  EXPECT_EQ(outcomes[2].response.body, "answer to y");
}

}  // namespace
}  // namespace dtrain::serving
