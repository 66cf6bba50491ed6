#pragma once

// Requests waiting for a model, and the workers that run them. A bounded
// queue: when `capacity` requests already wait, another is refused at once
// (503) rather than left to pile up, so an overloaded server answers quickly
// and a load balancer can send the request elsewhere.
//
// Invariants:
// - Every accepted request is answered exactly once: its future yields a
//   response or an exception. Refused requests (full, shutting down) throw
//   from submit() and are never queued.
// - waiting() counts requests queued and not yet taken; running() those a
//   worker has taken and not yet answered. waiting() <= capacity.
// - A worker takes the oldest request and, with max_batch > 1, up to
//   max_batch - 1 more from the front of the queue, and hands them to its
//   endpoint as one call (invoke for one request, invoke_batch for more):
//   requests are taken in arrival order and never split across calls.
// - A worker takes what is already waiting; only with batch_timeout > 0 does
//   it wait, at most that long, for more to fill its batch. Shutdown cuts
//   that wait short.
// - shutdown() refuses new requests; the workers still take and answer every
//   request already accepted, then exit.
#include <chrono>
#include <cstddef>
#include <deque>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "concurrency/mutex.h"
#include "serving/endpoint.h"

namespace dtrain::serving {

struct BatchOptions {
  size_t max_batch = 1;                        // requests per endpoint call; 1: no batching
  std::chrono::milliseconds batch_timeout{0};  // how long a worker may wait to fill a batch
};

class InferenceQueue {
 public:
  // One worker thread per endpoint, each running only its own endpoint.
  InferenceQueue(std::vector<std::unique_ptr<Endpoint>> endpoints, size_t capacity, BatchOptions batching = {});
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
  const BatchOptions& batching() const { return batching_; }
  size_t waiting() const;  // queued, not yet taken by a worker
  size_t running() const;  // taken by a worker, not yet answered

 private:
  struct Task {
    InvocationRequest request;
    std::promise<InvocationResponse> promise;
  };
  void work(Endpoint& endpoint);
  // The next requests for one endpoint call; empty when the worker should exit.
  std::vector<Task> take_batch();
  static void answer(Endpoint& endpoint, std::vector<Task>& batch);

  const size_t capacity_;
  const BatchOptions batching_;
  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::thread> threads_;
  mutable concurrency::Mutex mutex_;
  concurrency::ConditionVariable available_;
  std::deque<Task> tasks_ DTRAIN_GUARDED_BY(mutex_);
  size_t running_ DTRAIN_GUARDED_BY(mutex_) = 0;
  bool stopping_ DTRAIN_GUARDED_BY(mutex_) = false;
};

}  // namespace dtrain::serving
