#include "serving/inference_queue.h"

#include <stdexcept>
#include <string>

namespace dtrain::serving {

InferenceQueue::InferenceQueue(std::vector<std::unique_ptr<Endpoint>> endpoints, size_t capacity, BatchOptions batching)
    : capacity_(capacity), batching_(batching), endpoints_(std::move(endpoints)) {
  if (endpoints_.empty()) throw std::invalid_argument("InferenceQueue: needs at least one endpoint");
  if (batching_.max_batch < 1) throw std::invalid_argument("InferenceQueue: max_batch must be at least 1");
  for (auto& endpoint : endpoints_) threads_.emplace_back([this, e = endpoint.get()] { work(*e); });
}

InferenceQueue::~InferenceQueue() { shutdown(); }

std::future<InvocationResponse> InferenceQueue::submit(InvocationRequest request) {
  std::future<InvocationResponse> answer;
  {
    concurrency::MutexLock lock(mutex_);
    if (stopping_) throw InvocationError(503, "the server is shutting down");
    if (tasks_.size() >= capacity_) {
      throw InvocationError(503, "the server is busy: " + std::to_string(tasks_.size()) +
                                     " requests already wait for a worker (--queue-size)");
    }
    tasks_.push_back(Task{std::move(request), {}});
    answer = tasks_.back().promise.get_future();
  }
  // All, not one: a worker filling a batch (batch_timeout) may swallow a
  // single notification that an idle worker should have had.
  available_.notify_all();
  return answer;
}

void InferenceQueue::shutdown() {
  {
    concurrency::MutexLock lock(mutex_);
    stopping_ = true;
  }
  available_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

size_t InferenceQueue::waiting() const {
  concurrency::MutexLock lock(mutex_);
  return tasks_.size();
}

size_t InferenceQueue::running() const {
  concurrency::MutexLock lock(mutex_);
  return running_;
}

std::vector<InferenceQueue::Task> InferenceQueue::take_batch() {
  std::vector<Task> batch;
  concurrency::MutexLock lock(mutex_);
  // The predicates and take_waiting run with mutex_ held (a wait takes it back first).
  available_.wait(lock, [&]() DTRAIN_REQUIRES(mutex_) { return stopping_ || !tasks_.empty(); });
  if (tasks_.empty()) return batch;  // stopping, and nothing left to finish
  const auto take_waiting = [&]() DTRAIN_REQUIRES(mutex_) {
    while (!tasks_.empty() && batch.size() < batching_.max_batch) {
      batch.push_back(std::move(tasks_.front()));
      tasks_.pop_front();
      ++running_;
    }
  };
  take_waiting();
  if (batch.size() < batching_.max_batch && batching_.batch_timeout.count() > 0) {
    const auto deadline = std::chrono::steady_clock::now() + batching_.batch_timeout;
    const size_t missing = batching_.max_batch - batch.size();
    available_.wait_until(lock, deadline,
                          [&]() DTRAIN_REQUIRES(mutex_) { return stopping_ || tasks_.size() >= missing; });
    take_waiting();
  }
  return batch;
}

void InferenceQueue::answer(Endpoint& endpoint, std::vector<Task>& batch) {
  if (batch.size() == 1) {  // exactly what a server without batching does
    try {
      batch[0].promise.set_value(endpoint.invoke(batch[0].request));
    } catch (...) {
      batch[0].promise.set_exception(std::current_exception());
    }
    return;
  }
  std::vector<InvocationRequest> requests;
  for (Task& task : batch) requests.push_back(std::move(task.request));
  std::vector<InvocationOutcome> outcomes;
  try {
    outcomes = endpoint.invoke_batch(requests);
    if (outcomes.size() != batch.size()) {
      throw std::logic_error("the endpoint answered " + std::to_string(outcomes.size()) + " of a batch of " +
                             std::to_string(batch.size()) + " requests");
    }
  } catch (...) {
    for (Task& task : batch) task.promise.set_exception(std::current_exception());
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (outcomes[i].error) {
      batch[i].promise.set_exception(outcomes[i].error);
    } else {
      batch[i].promise.set_value(std::move(outcomes[i].response));
    }
  }
}

void InferenceQueue::work(Endpoint& endpoint) {
  for (;;) {
    std::vector<Task> batch = take_batch();
    if (batch.empty()) return;
    answer(endpoint, batch);
    concurrency::MutexLock lock(mutex_);
    running_ -= batch.size();
  }
}

}  // namespace dtrain::serving
