#pragma once

// Requests waiting for a model, and the workers that run them. A bounded
// queue: when `capacity` requests already wait, another is refused at once
// (503) rather than left to pile up, so an overloaded server answers quickly
// and a load balancer can send the request elsewhere.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "serving/endpoint.h"

namespace dtrain::serving {

class InferenceQueue {
 public:
  // One worker thread per endpoint, each running only its own endpoint.
  InferenceQueue(std::vector<std::unique_ptr<Endpoint>> endpoints, size_t capacity);
  // Finishes what is queued and running, then joins the workers.
  ~InferenceQueue();
  InferenceQueue(const InferenceQueue&) = delete;
  InferenceQueue& operator=(const InferenceQueue&) = delete;

  // Queues `request`; the future yields the endpoint's response or rethrows
  // its exception. Throws InvocationError 503 when the queue is full or
  // shutting down.
  std::future<InvocationResponse> submit(InvocationRequest request);

  // Refuses new requests, lets the workers finish every queued one, joins.
  void shutdown();

  size_t workers() const { return threads_.size(); }
  size_t capacity() const { return capacity_; }
  size_t waiting() const;  // queued, not yet taken by a worker
  size_t running() const;  // taken by a worker, not yet answered

 private:
  struct Task {
    InvocationRequest request;
    std::promise<InvocationResponse> promise;
  };
  void work(Endpoint& endpoint);

  const size_t capacity_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::thread> threads_;
  mutable std::mutex mutex_;
  std::condition_variable available_;
  std::deque<Task> tasks_;
  size_t running_ = 0;
  bool stopping_ = false;
};

}  // namespace dtrain::serving
