#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/support/status.h>

#include "concurrency/mutex.h"
#include "ps/parameter_server.pb.h"
#include "ps/shard_plan.h"
#include "ps/update_rule.h"

namespace dtrain::ps {

struct PsClientOptions {
  int worker = 0;  // this worker's rank; 0 is the chief
  int num_workers = 1;
  std::vector<std::string> servers;  // "host:port", by server index
  std::string token;                 // the job token every request carries
  double rpc_timeout_s = 120;        // the deadline of every request (DTRAIN_PS_RPC_TIMEOUT)
  double heartbeat_s = 2;            // how often the worker tells the servers it is alive
};

// What `dtrain run --ps` hands a worker: its rank, the number of workers, the job token,
// and the servers' addresses, which each server publishes in the launcher's rendezvous
// store when it is listening (this waits for them). Also reports the worker ready to the
// launcher. Throws PsError when the environment is not a parameter-server job's.
PsClientOptions ps_client_options_from_environment();

// A worker's connection to every parameter server of the job: registration, pushes of
// gradient pieces (asynchronous: the callback runs on a gRPC thread), pulls,
// and a heartbeat thread. Errors name the server and its address.
class PsClient {
 public:
  PsClient(PsClientOptions options, ShardPlan plan);
  ~PsClient();
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

  const ShardPlan& plan() const { return plan_; }
  const PsClientOptions& options() const { return options_; }

  // Declares the pieces each server holds and the update rule. The chief's call also sets
  // the initial values (`initial_value(piece)` points at the piece's floats); the others'
  // calls return once the chief's have. `start_step`: the chief's (0, or where its checkpoint
  // left off).
  struct Registration {
    std::string mode;  // the servers' mode: "async" or "sync"
    std::int64_t start_step = 0;
  };
  Registration register_worker(const UpdateRuleSpec& rule,
                               const std::function<const float*(const Piece&)>& initial_value, std::int64_t start_step);

  // `done(error, value)`: error empty on success, value the piece's bytes after the update.
  // Called on one of gRPC's threads; the client's destructor waits for the pushes in flight,
  // so `done` must not destroy the client.
  using PushDone = std::function<void(const std::string& error, std::string&& value)>;
  void push(int piece, std::int64_t step, double learning_rate, const float* gradient, PushDone done);

  // The current bytes of each piece, in the order asked.
  std::vector<std::string> pull(const std::vector<int>& pieces);

  // Waits until no worker but this one is still training (left or dropped), at most
  // `timeout_s`; the chief calls it before its final pull.
  void wait_for_other_workers(double timeout_s);
  // Tells every server this worker is done; stops the heartbeat.
  void leave();

  // The first error the heartbeat thread met (a server gone), or empty.
  std::string heartbeat_error() const;

 private:
  struct Server;
  std::string describe(int server) const;
  // "worker W: <doing> parameter server S (address): <code>: <message>".
  std::string failure(const std::string& doing, int server, const grpc::Status& status) const;
  grpc::Status heartbeat(int server, bool leaving, wire::HeartbeatReply& reply);
  void heartbeat_loop();
  void push_finished();

  PsClientOptions options_;
  ShardPlan plan_;
  std::vector<std::unique_ptr<Server>> servers_;
  mutable concurrency::Mutex mutex_;
  concurrency::ConditionVariable wake_;
  bool stopping_ DTRAIN_GUARDED_BY(mutex_) = false;
  bool left_ DTRAIN_GUARDED_BY(mutex_) = false;
  std::string heartbeat_error_ DTRAIN_GUARDED_BY(mutex_);
  // A push's completion reads the client (its error names the server): the client outlives it.
  int pushes_in_flight_ DTRAIN_GUARDED_BY(mutex_) = 0;
  std::thread heartbeat_;
};

}  // namespace dtrain::ps
