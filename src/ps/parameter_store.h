#pragma once

#include <grpcpp/support/status.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

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
    std::mutex mutex;
    std::vector<float> values;
    UpdateState state;
    std::int64_t version = 0;
    // Sync mode: the round in progress. Gradients are kept per worker and summed in worker
    // order once the round is complete, so the result does not depend on arrival order.
    std::optional<std::int64_t> round_step;
    std::map<int, std::vector<float>> round_gradients;  // worker -> its gradient
    std::vector<PushDone> round_waiters;
    double round_learning_rate = 0;
  };

  grpc::Status check_worker(int worker) const;  // holds mutex_
  // Workers start at different speeds (loading data, a slow host): a worker that has not
  // registered yet is given at least a minute before it is dropped.
  double registration_grace_s() const { return std::max(options_.worker_timeout_s, 60.0); }
  bool participating(const Worker& w) const {
    return w.state == WorkerState::kExpected || w.state == WorkerState::kLive;
  }
  void apply(Piece& piece, double learning_rate, const float* gradient);
  void try_finish_rounds();      // sync: rounds whose participants have all pushed
  void release_stale_waiters();  // async with a staleness bound
  bool may_proceed(std::int64_t step) const;
  void drop(int worker, const std::string& why);

  ParameterStoreOptions options_;
  mutable std::mutex mutex_;
  bool initialized_ = false;
  std::int64_t start_step_ = 0;
  int num_workers_ = 0;
  std::vector<PieceDeclaration> layout_;  // as first declared
  UpdateRuleSpec rule_;
  std::map<std::string, Piece> pieces_;
  std::vector<Worker> workers_;
  std::vector<RegisterDone> registrations_waiting_;
  std::vector<std::pair<std::string, PendingPush>> stale_waiters_;  // (piece, push)
};

}  // namespace dtrain::ps
