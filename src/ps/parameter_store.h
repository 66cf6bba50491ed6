#pragma once

#include <grpcpp/support/status.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "concurrency/mutex.h"
#include "ps/update_rule.h"

namespace dtrain::ps {

enum class UpdateMode { kAsync, kSync };

struct ParameterStoreOptions {
  int server = 0;  // this server's index, for messages
  UpdateMode mode = UpdateMode::kAsync;
  // Async only: a worker may run at most this many steps ahead of the slowest
  // worker still training; its push waits until that one catches up. -1: no bound.
  int staleness = -1;
  // A worker that sends nothing for this long (workers heartbeat every second or
  // two) is dropped: nobody waits for it any more and its later requests are refused.
  double worker_timeout_s = 15;
};

struct PieceDeclaration {
  std::string name;
  std::int64_t elements = 0;
};

// The state of one parameter server, without the RPC around it: the pieces it
// holds, their optimizer state, and the workers it serves. Every request
// completes through a callback, possibly later and on another thread (a sync
// round completes when the last worker's gradient arrives; a registration when
// the chief has initialised the values), so RPC threads never block.
class ParameterStore {
 public:
  using Clock = std::chrono::steady_clock;
  // On success `start_step` is the step the chief starts from.
  using RegisterDone = std::function<void(const grpc::Status&, std::int64_t start_step)>;
  // On success `value` holds the piece after the update this push took part in.
  using PushDone = std::function<void(const grpc::Status&, std::int64_t version, const std::vector<float>& value)>;

  explicit ParameterStore(ParameterStoreOptions options);

  const ParameterStoreOptions& options() const { return options_; }

  // Every worker declares the same pieces and update rule; the chief (worker 0)
  // also sends the initial values. Completes once the chief has done so.
  void register_worker(int worker, int num_workers, const std::vector<PieceDeclaration>& pieces,
                       const UpdateRuleSpec& rule, const std::vector<std::string>& initial_values,
                       std::int64_t start_step, RegisterDone done);

  void push(int worker, std::int64_t step, double learning_rate, const std::string& piece,
            const std::string& gradient_bytes, PushDone done);

  // Current values of the named pieces.
  grpc::Status pull(int worker, const std::vector<std::string>& pieces, std::vector<std::string>& values);

  // Notes that the worker is alive; `leaving`: it is done and nobody waits for it any more.
  // `live_workers`: how many are registered and have neither left nor been dropped.
  grpc::Status heartbeat(int worker, bool leaving, int& live_workers);

  // Completes every request still waiting (registrations, sync rounds, stale pushes) with
  // `status`: a server shutting down must not leave RPCs open.
  void abort_waiting(const grpc::Status& status);

  // Drops workers silent for longer than worker_timeout_s (called periodically).
  void check_liveness(Clock::time_point now = Clock::now());

 private:
  enum class WorkerState { kExpected, kLive, kLeft, kDropped };
  struct Worker {
    WorkerState state = WorkerState::kExpected;
    Clock::time_point last_seen;
    std::int64_t clock = -1;  // the latest step it pushed
  };
  struct PendingPush {
    int worker;
    std::int64_t step;
    double learning_rate;
    std::string gradient;
    PushDone done;
  };
  // Lock order: mutex_, then a piece's mutex. An async push releases mutex_ once its
  // bookkeeping is done and applies under the piece's mutex alone.
  struct Piece {
    concurrency::Mutex mutex;
    std::size_t elements = 0;  // set with the chief's initial values, then fixed
    std::vector<float> values DTRAIN_GUARDED_BY(mutex);
    UpdateState state DTRAIN_GUARDED_BY(mutex);
    std::int64_t version DTRAIN_GUARDED_BY(mutex) = 0;
    // Sync mode, under the store's mutex_: the round in progress. Gradients are kept per
    // worker and summed in worker order once the round is complete, so the result does not
    // depend on arrival order.
    std::optional<std::int64_t> round_step;
    std::map<int, std::vector<float>> round_gradients;  // worker -> its gradient
    std::vector<PushDone> round_waiters;
    double round_learning_rate = 0;
  };

  grpc::Status check_worker(int worker) const DTRAIN_REQUIRES(mutex_);
  // Workers start at different speeds (loading data, a slow host): a worker that has not
  // registered yet is given at least a minute before it is dropped.
  double registration_grace_s() const { return std::max(options_.worker_timeout_s, 60.0); }
  static bool participating(const Worker& w) {
    return w.state == WorkerState::kExpected || w.state == WorkerState::kLive;
  }
  void apply(Piece& piece, double learning_rate, const float* gradient) DTRAIN_REQUIRES(piece.mutex);
  // Sync: completes the rounds whose participants have all pushed.
  void try_finish_rounds() DTRAIN_REQUIRES(mutex_);
  // Async with a staleness bound: applies the waiting pushes that may now proceed.
  void release_stale_waiters() DTRAIN_REQUIRES(mutex_);
  bool may_proceed(std::int64_t step) const DTRAIN_REQUIRES(mutex_);
  void drop(int worker, const std::string& why) DTRAIN_REQUIRES(mutex_);

  ParameterStoreOptions options_;
  mutable concurrency::Mutex mutex_;
  bool initialized_ DTRAIN_GUARDED_BY(mutex_) = false;
  std::int64_t start_step_ DTRAIN_GUARDED_BY(mutex_) = 0;
  int num_workers_ DTRAIN_GUARDED_BY(mutex_) = 0;
  std::vector<PieceDeclaration> layout_ DTRAIN_GUARDED_BY(mutex_);  // as first declared
  // Set by the first registration, before any push is accepted, and fixed after: apply()
  // reads it under a piece's mutex alone.
  UpdateRuleSpec rule_;
  std::map<std::string, Piece> pieces_ DTRAIN_GUARDED_BY(mutex_);
  std::vector<Worker> workers_ DTRAIN_GUARDED_BY(mutex_);
  std::vector<RegisterDone> registrations_waiting_ DTRAIN_GUARDED_BY(mutex_);
  std::vector<std::pair<std::string, PendingPush>> stale_waiters_ DTRAIN_GUARDED_BY(mutex_);  // (piece, push)
};

}  // namespace dtrain::ps
