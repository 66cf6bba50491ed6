// The bounded queue in front of the inference workers: concurrency up to the
// worker count, immediate 503 when full, errors carried to the caller, and a
// shutdown that finishes what was accepted.
#include "serving/inference_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

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

}  // namespace
}  // namespace dtrain::serving
