// One per process while initialised: owns the transport and runs the negotiation cycles.
//
// A cycle is collective (every rank runs the same sequence of them) and runs on one thread
// at a time, but not always the same one: the loop's own thread runs the cycles nobody waits
// for (a batching window after submissions, an idle cycle now and then), and a user thread
// that waits for an operation runs them itself until the operation finishes. A blocking call
// then costs no hand-off between threads in either direction, which on a small machine is
// most of its latency. Where the transport offers it, a cycle whose plan every rank can make
// alone costs one reduction of summaries instead of two exchanges through rank 0
// (cycle_summary.h).
//
// Invariants: `cycling_` is true while exactly one thread is inside cycle(); only that
// thread touches the cycle state (pending_, the cache, coordinator, executor, transport,
// timeline). What user threads share is guarded by mutex_, checked by Clang's analysis.
// Once `failure_` is set no cycle runs again and every operation has been failed.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "concurrency/mutex.h"
#include "runtime/autotuner.h"
#include "runtime/coordinator.h"
#include "runtime/cycle_summary.h"
#include "runtime/environment.h"
#include "runtime/op_state.h"
#include "runtime/op_executor.h"
#include "runtime/response_cache.h"
#include "runtime/tensor_entry.h"
#include "runtime/timeline.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class BackgroundLoop {
 public:
  using Clock = std::chrono::steady_clock;

  BackgroundLoop(RuntimeConfig config, std::unique_ptr<Transport> transport);
  ~BackgroundLoop();  // stops the loop (as shutdown() does) if still running

  const RuntimeConfig& config() const { return config_; }

  // Queues entries for negotiation. Throws if the runtime failed or stopped, or if a name is
  // already in flight on this rank. All entries are accepted or none. `caller_waits`: the
  // caller calls wait() next (a blocking call), so the loop's thread need not be woken.
  void submit(std::vector<TensorEntry> entries, bool caller_waits = false);

  // Returns once `operation` has finished (or failed), running negotiation cycles on the
  // calling thread meanwhile. The first cycle starts at once: the cycle time is a batching
  // window for what is submitted meanwhile, and a waiting thread submits nothing more (a
  // blocking call, synchronize() after backward). A cycle that executes nothing means the
  // other ranks have not caught up yet; the next one then waits for the cycle time.
  void wait(detail::OpState& operation);

  // Asks every rank to stop, waits for the loop to end, and fails what is still pending.
  void stop();

  // Rank 0: starts writing `timeline` in place of the one being written, or with nullptr
  // stops. Applied between two cycles; returns once it is, so a timeline replaced or stopped
  // here is a complete file when this returns.
  void replace_timeline(std::unique_ptr<Timeline> timeline);

 private:
  void run();  // the loop's own thread
  // With mutex_ held and no cycle running: runs one on this thread, unlocked meanwhile; ends
  // the loop if it fails or was the last. Returns whether it executed anything.
  bool run_cycle() DTRAIN_REQUIRES(mutex_);
  struct CycleOutcome {
    bool executed = false;     // the plan ran at least one operation
    double cycle_time_ms = 0;  // the plan's batching window
  };
  CycleOutcome cycle(Clock::time_point start);
  // The shortcut's outcome (cycle_summary.h): what every rank runs, and which of it rode on
  // the summaries (views into `combined`).
  struct Agreement {
    std::vector<std::uint32_t> positions;
    std::vector<char> combined;
    std::vector<RiddenAllreduce> ridden;
  };
  std::optional<Agreement> agree(const CycleReport& report, bool grouped, Clock::time_point now);
  std::vector<SummaryRider> riders();
  // Executes the ridden allreduces of `resolved` (in the agreed positions' order) and returns
  // the rest.
  std::vector<Response> run_ridden(const Agreement& agreement, std::vector<Response> resolved);
  CyclePlan agreed_plan(const std::vector<std::uint32_t>& positions);
  CyclePlan negotiate(const CycleReport& report);
  TunedKnobs rank0_knobs() const;  // rank 0: the settings its next plan carries
  Clock::time_point next_own_cycle() const DTRAIN_REQUIRES(mutex_);
  std::vector<Response> resolve(const CyclePlan& plan);
  void feed_autotuner(const std::vector<Response>& executed);
  void fail_everything(const std::string& reason, bool lost_peer);
  void take_timeline_handover() DTRAIN_REQUIRES(mutex_);

  RuntimeConfig config_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Autotuner> autotuner_;  // rank 0 with DTRAIN_AUTOTUNE
  std::unique_ptr<Timeline> timeline_;
  FlightRecorder recorder_;
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;  // rank 0 only
  OpExecutor executor_;

  // Shared with user threads.
  concurrency::Mutex mutex_;
  concurrency::ConditionVariable submitted_;  // wakes an idle loop
  std::deque<TensorEntry> queue_ DTRAIN_GUARDED_BY(mutex_);
  std::set<std::string> in_flight_ DTRAIN_GUARDED_BY(mutex_);
  std::string failure_ DTRAIN_GUARDED_BY(mutex_);             // set once the loop has ended; what submit() reports
  bool failure_lost_peer_ DTRAIN_GUARDED_BY(mutex_) = false;  // ...because a peer was lost (WorkersLostError)
  std::atomic<bool> stop_requested_{false};
  bool cycling_ DTRAIN_GUARDED_BY(mutex_) = false;                // a thread is inside cycle()
  concurrency::ConditionVariable cycle_done_;                     // cycling_ became false
  Clock::time_point last_cycle_start_ DTRAIN_GUARDED_BY(mutex_);  // of the newest cycle, whichever thread ran it
  double cycle_time_ms_ DTRAIN_GUARDED_BY(mutex_);                // the newest plan's batching window
  // Operations negotiated but not finished after the newest cycle.
  bool work_pending_ DTRAIN_GUARDED_BY(mutex_) = false;
  // replace_timeline() waits for it to be taken.
  std::optional<std::unique_ptr<Timeline>> timeline_handover_ DTRAIN_GUARDED_BY(mutex_);
  concurrency::ConditionVariable timeline_taken_;

  // The cycling thread only.
  std::deque<TensorEntry> arrived_;  // the queue as a cycle took it
  std::unordered_map<std::string, TensorEntry> pending_;
  // Cached submissions neither run yet nor handed to the coordinator, by cache position, with
  // when each was submitted: the shortcut runs a position once every rank holds it. One held
  // for kLongestHold sends the cycle to the coordinator, whose stall inspector then watches it.
  std::map<std::uint32_t, Clock::time_point> held_;
  static constexpr std::chrono::seconds kLongestHold{1};
  bool stopped_by_plan_ = false;
  std::optional<TunedKnobs> plan_knobs_;         // the settings of rank 0's latest plan, once there was one
  std::atomic<std::uint64_t> cycles_{0};         // for the debug log at the end
  std::atomic<std::uint64_t> agreed_cycles_{0};  // ...of which the shortcut planned
  std::atomic<std::uint64_t> ridden_{0};         // allreduces that rode on the summaries
  std::vector<char> rider_data_;                 // this cycle's riders' bytes, prescaled

  std::thread thread_;
};

}  // namespace dtrain::runtime
