// One per process while initialised: owns the transport and runs the negotiation cycle on
// its own thread. User threads only enqueue entries and read handles.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/autotuner.h"
#include "runtime/coordinator.h"
#include "runtime/environment.h"
#include "runtime/op_executor.h"
#include "runtime/response_cache.h"
#include "runtime/tensor_entry.h"
#include "runtime/timeline.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class BackgroundLoop {
 public:
  BackgroundLoop(RuntimeConfig config, std::unique_ptr<Transport> transport);
  ~BackgroundLoop();  // stops the loop (as shutdown() does) if still running

  const RuntimeConfig& config() const { return config_; }

  // Queues entries for negotiation. Throws if the runtime failed or stopped, or if a name is
  // already in flight on this rank. All entries are accepted or none.
  void submit(std::vector<TensorEntry> entries);

  // A thread waits for an operation: start the next cycle without waiting out the cycle
  // time. The cycle time is a batching window for what is submitted meanwhile, and a waiting
  // thread submits nothing more (a blocking call, synchronize() after backward).
  void expedite();

  // Asks every rank to stop, waits for the loop to end, and fails what is still pending.
  void stop();

  // Rank 0: starts writing `timeline` in place of the one being written, or with nullptr
  // stops. Applied between two cycles; returns once it is, so a timeline replaced or stopped
  // here is a complete file when this returns.
  void replace_timeline(std::unique_ptr<Timeline> timeline);

 private:
  void run();
  void cycle();
  std::vector<Response> resolve(const CyclePlan& plan);
  void feed_autotuner(const std::vector<Response>& executed);
  void fail_everything(const std::string& reason, bool lost_peer);
  void take_timeline_handover();  // with mutex_ held

  RuntimeConfig config_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Autotuner> autotuner_;  // rank 0 with DTRAIN_AUTOTUNE
  double cycle_time_ms_;                  // the last plan's batching window
  std::unique_ptr<Timeline> timeline_;
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  OpExecutor executor_;

  // Shared with user threads.
  std::mutex mutex_;
  std::condition_variable submitted_;  // wakes an idle loop
  std::deque<TensorEntry> queue_;
  std::set<std::string> in_flight_;
  std::string failure_;  // set once the loop has ended; what submit() reports
  bool failure_lost_peer_ = false;  // ...because a peer was lost (WorkersLostError)
  std::atomic<bool> stop_requested_{false};
  bool expedited_ = false;  // since the last cycle began
  std::optional<std::unique_ptr<Timeline>> timeline_handover_;  // replace_timeline() waits for it to be taken
  std::condition_variable timeline_taken_;

  // Background thread only.
  std::unordered_map<std::string, TensorEntry> pending_;
  bool stopped_by_plan_ = false;

  std::thread thread_;
};

}  // namespace dtrain::runtime
