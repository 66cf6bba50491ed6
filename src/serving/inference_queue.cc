#include "serving/inference_queue.h"

#include <stdexcept>

namespace dtrain::serving {

InferenceQueue::InferenceQueue(std::vector<std::unique_ptr<Endpoint>> endpoints, size_t capacity)
    : capacity_(capacity), endpoints_(std::move(endpoints)) {
  if (endpoints_.empty()) throw std::invalid_argument("InferenceQueue: needs at least one endpoint");
  for (auto& endpoint : endpoints_) threads_.emplace_back([this, e = endpoint.get()] { work(*e); });
}

InferenceQueue::~InferenceQueue() { shutdown(); }

std::future<InvocationResponse> InferenceQueue::submit(InvocationRequest request) {
  std::future<InvocationResponse> answer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw InvocationError(503, "the server is shutting down");
    if (tasks_.size() >= capacity_) {
      throw InvocationError(503, "the server is busy: " + std::to_string(tasks_.size()) +
                                     " requests already wait for a worker (--queue-size)");
    }
    tasks_.push_back(Task{std::move(request), {}});
    answer = tasks_.back().promise.get_future();
  }
  available_.notify_one();
  return answer;
}

void InferenceQueue::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  available_.notify_all();
  for (std::thread& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

size_t InferenceQueue::waiting() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tasks_.size();
}

size_t InferenceQueue::running() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return running_;
}

void InferenceQueue::work(Endpoint& endpoint) {
  for (;;) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      available_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left to finish
      task = std::move(tasks_.front());
      tasks_.pop_front();
      ++running_;
    }
    try {
      task.promise.set_value(endpoint.invoke(task.request));
    } catch (...) {
      task.promise.set_exception(std::current_exception());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    --running_;
  }
}

}  // namespace dtrain::serving
