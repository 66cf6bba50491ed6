#include "runtime/background_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/cycle_summary.h"
#include "runtime/fusion_planner.h"
#include "runtime/logging.h"
#include "runtime/loop_priority.h"
#include "runtime/reduction.h"

namespace dtrain::runtime {

namespace {
// How long a rank with nothing queued or in flight waits before its next cycle (unless a
// submission wakes it first). Cycles are collective, so the others' cycles stretch too and an
// idle job costs almost no CPU; a submission still starts negotiation immediately.
constexpr auto kIdleCycle = std::chrono::milliseconds(20);

BackgroundLoop::Clock::duration milliseconds(double ms) {
  return std::chrono::duration_cast<BackgroundLoop::Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

// A process set's loop records, and is named, by this process's place in the job.
int job_rank(const RuntimeConfig& config) { return config.members.empty() ? config.rank : config.members[config.rank]; }
int job_size(const RuntimeConfig& config) { return config.members.empty() ? config.size : config.job_size; }

bool finished(detail::OpState& operation) {
  concurrency::MutexLock lock(operation.mutex);
  return operation.status != Status::kPending;
}
}  // namespace

BackgroundLoop::BackgroundLoop(RuntimeConfig config, std::unique_ptr<Transport> transport)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      timeline_(config_.rank == 0 && !config_.timeline_path.empty()
                    ? std::make_unique<Timeline>(config_.timeline_path, config_.timeline_mark_cycles)
                    : nullptr),
      recorder_(config_.flight_recorder_entries, job_rank(config_), job_size(config_), config_.hostname,
                config_.flight_recorder_dir, config_.process_set),
      cache_(config_.cache_capacity),
      executor_(
          *transport_, timeline_.get(),
          [this](const std::string& name) {
            concurrency::MutexLock lock(mutex_);
            in_flight_.erase(name);
          },
          [this](int device, HostRunner host) {
            return make_device_engine(*transport_, config_, device, std::move(host));
          }) {
  executor_.set_flight_recorder(&recorder_);
  cycle_time_ms_ = config_.cycle_time_ms;
  last_cycle_start_ = Clock::now();
  if (config_.rank == 0) {
    coordinator_ = std::make_unique<Coordinator>(config_.size, cache_,
                                                 StallInspector(config_.stall_warning_s, config_.stall_shutdown_s),
                                                 timeline_.get(), config_.members);
    if (config_.autotune && config_.size > 1) {
      AutotuneOptions options;
      options.warmup_samples = config_.autotune_warmup_samples;
      options.steps_per_sample = config_.autotune_steps_per_sample;
      options.log_path = config_.autotune_log;
      autotuner_ = std::make_unique<Autotuner>(TunedKnobs{config_.fusion_threshold_bytes, config_.cycle_time_ms},
                                               std::move(options));
    }
  }
  thread_ = std::thread([this] { run(); });
}

BackgroundLoop::~BackgroundLoop() { stop(); }

// The loop's thread sleeps until its next cycle is due (next_own_cycle), and a submission
// brings that forward only when the loop was idle: nothing queued and nothing in flight. So
// only then is it woken (after the mutex is released, so it does not wake into a held lock):
// waking it for every submission cost two context switches and a contended mutex for each
// gradient in backward, on cores that the computation needs.
void BackgroundLoop::submit(std::vector<TensorEntry> entries, bool caller_waits) {
  concurrency::MutexLock lock(mutex_);
  if (!failure_.empty()) {
    if (failure_lost_peer_) throw WorkersLostError(failure_);
    throw Error(failure_);
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const auto& name = entries[i].request.name;
    bool repeated = in_flight_.contains(name);
    for (std::size_t j = 0; j < i && !repeated; ++j) repeated = entries[j].request.name == name;
    if (repeated) {
      throw Error("dtrain: " + std::string(to_string(entries[i].request.type)) + " '" + name + "' on rank " +
                  std::to_string(job_rank(config_)) +
                  ": a collective with this name is already in flight; wait for it before reusing the name");
    }
  }
  const bool was_idle = queue_.empty() && !work_pending_;
  for (auto& entry : entries) {
    in_flight_.insert(entry.request.name);
    queue_.push_back(std::move(entry));
  }
  lock.unlock();
  if (was_idle && !caller_waits) submitted_.notify_one();
}

void BackgroundLoop::wait(detail::OpState& operation) {
  concurrency::MutexLock lock(mutex_);
  bool pace = false;  // this thread's last cycle executed nothing
  while (failure_.empty() && !finished(operation)) {
    if (cycling_) {
      cycle_done_.wait(lock);
      continue;
    }
    if (pace) {
      const auto next = last_cycle_start_ + milliseconds(cycle_time_ms_);
      if (Clock::now() < next) {
        cycle_done_.wait_until(lock, next);  // or until another thread's cycle finishes it
        continue;
      }
    }
    pace = !run_cycle();
  }
}

void BackgroundLoop::stop() {
  {
    concurrency::MutexLock lock(mutex_);
    stop_requested_ = true;
  }
  submitted_.notify_one();
  if (!thread_.joinable()) return;
  thread_.join();
  log().debug(
      "negotiation: {} of {} cycles planned by every rank itself (the shortcut), the rest by rank 0; {} allreduces "
      "rode on the summaries",
      agreed_cycles_.load(), cycles_.load(), ridden_.load());
}

void BackgroundLoop::replace_timeline(std::unique_ptr<Timeline> timeline) {
  concurrency::MutexLock lock(mutex_);
  while (timeline_handover_ && failure_.empty()) timeline_taken_.wait(lock);  // another thread's first
  timeline_handover_ = std::move(timeline);
  submitted_.notify_one();
  while (timeline_handover_ && failure_.empty()) timeline_taken_.wait(lock);
  if (timeline_handover_) take_timeline_handover();  // the loop has ended: nobody else uses the timeline now
}

// The coordinator and the executor write to the timeline; both are told of the new one here,
// between cycles, so no phase of an operation is written half to one file and half to another.
void BackgroundLoop::take_timeline_handover() {
  if (!timeline_handover_) return;
  timeline_ = std::move(*timeline_handover_);  // the old one, if any, is closed complete here
  timeline_handover_.reset();
  if (coordinator_) coordinator_->set_timeline(timeline_.get());
  executor_.set_timeline(timeline_.get());
  timeline_taken_.notify_all();
}

// The loop's own thread cycles for the operations nobody waits for: one cycle time after the
// newest cycle while anything is queued or in flight, after an idle cycle's time otherwise;
// at once to stop or to take a new timeline. Cycles run by waiting threads count as its own.
//
// While a waiting thread cycles back to back, the next cycle is always due later than now, so
// this thread sleeps through them and is not woken by each (that would cost the waiting
// thread a futex wake per cycle). It waits for a running cycle's end only once that cycle has
// overrun the time its successor was due (one blocked on a slower peer).
void BackgroundLoop::run() {
  lower_loop_thread_priority(config_);
  concurrency::MutexLock lock(mutex_);
  while (failure_.empty()) {
    const auto due = next_own_cycle();
    if (Clock::now() < due) {
      submitted_.wait_until(lock, due);
    } else if (cycling_) {
      cycle_done_.wait(lock);
    } else {
      run_cycle();
    }
  }
}

BackgroundLoop::Clock::time_point BackgroundLoop::next_own_cycle() const {
  if (stop_requested_ || timeline_handover_) return last_cycle_start_;
  if (work_pending_ || !queue_.empty()) return last_cycle_start_ + milliseconds(cycle_time_ms_);
  return last_cycle_start_ + kIdleCycle;
}

bool BackgroundLoop::run_cycle() {
  cycling_ = true;
  const auto start = Clock::now();
  last_cycle_start_ = start;
  mutex_.unlock();  // the caller's lock, taken again below before it returns
  CycleOutcome outcome;
  std::optional<std::pair<std::string, bool>> ended;  // why, and whether a peer was lost
  bool write_record = false;                          // an error: not a shutdown, not an elastic world shrinking
  try {
    outcome = cycle(start);
    if (timeline_) timeline_->flush();
    if (stopped_by_plan_) {
      // Every rank has received the final plan once all reach here; only then close sockets.
      try {
        transport_->barrier();
      } catch (const std::exception&) {
        // A peer that already went away changes nothing for this rank's shutdown.
      }
      if (config_.process_set.empty()) {
        ended.emplace("dtrain: the runtime was shut down before this operation completed", false);
      } else if (config_.elastic_worker >= 0 && !stop_requested_) {
        // Another member shut its runtime down: in an elastic job, because its world is being
        // formed anew. This rank's world is going too; it recovers as from a lost worker.
        ended.emplace(
            "dtrain: process set " + config_.process_set + " was ended by another member (an elastic world re-forming)",
            true);
      } else {
        ended.emplace("dtrain: process set " + config_.process_set + " was removed before this operation completed",
                      false);
      }
    }
  } catch (const WorkersLostError& e) {
    log().error("{}", e.what());
    ended.emplace(e.what(), true);
    // A peer silent past the timeout or a broken link ends an ordinary job: worth a record.
    // In an elastic job it is the world shrinking, which the job recovers from.
    write_record = config_.elastic_worker < 0;
  } catch (const std::exception& e) {
    log().error("{}", e.what());
    ended.emplace(e.what(), false);
    write_record = true;
  }
  // While the operations are still in flight, so the record shows what each rank waited on.
  if (write_record) recorder_.write(ended->first);
  if (ended) fail_everything(ended->first, ended->second);  // still the cycling thread: pending_ is ours
  mutex_.lock();
  cycling_ = false;
  work_pending_ = !pending_.empty();
  if (!ended) cycle_time_ms_ = outcome.cycle_time_ms;
  cycle_done_.notify_all();            // cheap when nobody waits, the usual case
  if (ended) submitted_.notify_one();  // the loop's thread ends too
  return outcome.executed;
}

void BackgroundLoop::fail_everything(const std::string& reason, bool lost_peer) {
  std::deque<TensorEntry> queued;
  {
    concurrency::MutexLock lock(mutex_);
    failure_ = reason;
    failure_lost_peer_ = lost_peer;
    timeline_taken_.notify_all();
    queued.swap(queue_);
    in_flight_.clear();
  }
  for (auto& entry : queued) entry.state->fail(reason, lost_peer);
  for (auto& entry : arrived_) entry.state->fail(reason, lost_peer);  // a cycle that failed taking them
  arrived_.clear();
  for (auto& [name, entry] : pending_) entry.state->fail(reason, lost_peer);
  pending_.clear();
}

BackgroundLoop::CycleOutcome BackgroundLoop::cycle(Clock::time_point start) {
  executor_.check_device_health();
  recorder_.new_cycle(start);
  CycleReport report;
  bool grouped = false;  // a cached operation of a group: the coordinator waits for the whole group
  {
    concurrency::MutexLock lock(mutex_);
    take_timeline_handover();
    arrived_.swap(queue_);  // the rest without the lock: user threads go on submitting
  }
  for (TensorEntry& entry : arrived_) {
    entry.record = recorder_.submitted(entry.request, entry.submitted);
    if (auto position = cache_.find(entry.request); position && entry.request.type != OpType::kJoin) {
      held_.emplace(*position, start);
      grouped = grouped || !entry.request.group.empty();
    } else {
      report.requests.push_back(entry.request);
    }
    std::string name = entry.request.name;
    pending_.emplace(std::move(name), std::move(entry));
  }
  arrived_.clear();  // kept, empty, to be swapped with the queue next cycle: no allocation
  report.shutdown = stop_requested_;
  for (const auto& [position, since] : held_) set_bit(report.cache_bits, position);

  CyclePlan plan;
  cycles_.fetch_add(1, std::memory_order_relaxed);
  std::optional<Agreement> agreement = agree(report, grouped, start);
  if (agreement) {
    agreed_cycles_.fetch_add(1, std::memory_order_relaxed);
    for (const std::uint32_t position : agreement->positions) held_.erase(position);
    plan = agreed_plan(agreement->positions);
  } else {
    plan = negotiate(report);
    held_.clear();  // the coordinator has them now
    plan_knobs_ = TunedKnobs{plan.fusion_threshold_bytes, plan.cycle_time_ms};
  }

  std::vector<Response> resolved = resolve(plan);
  const bool executes = !resolved.empty();
  if (timeline_ && executes) timeline_->mark_cycle(start);
  if (agreement && !agreement->ridden.empty()) resolved = run_ridden(*agreement, std::move(resolved));
  const std::vector<Response> responses =
      fuse_responses(std::move(resolved), static_cast<std::size_t>(plan.fusion_threshold_bytes));
  for (const Response& response : responses) executor_.execute(response, pending_);
  if (autotuner_ && !autotuner_->finished()) feed_autotuner(responses);
  if (plan.shutdown) {
    stopped_by_plan_ = true;
    if (!plan.shutdown_reason.empty()) {
      throw Error(config_.process_set.empty() ? plan.shutdown_reason
                                              : "process set " + config_.process_set + ": " + plan.shutdown_reason);
    }
  }
  return {executes, plan.cycle_time_ms};
}

std::vector<Response> BackgroundLoop::run_ridden(const Agreement& agreement, std::vector<Response> resolved) {
  std::vector<Response> rest;
  auto ridden = agreement.ridden.begin();  // both in position order
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    if (ridden != agreement.ridden.end() && ridden->position == agreement.positions[i]) {
      executor_.execute(resolved[i], pending_, &ridden->by_rank);
      ridden_.fetch_add(1, std::memory_order_relaxed);
      ++ridden;
    } else {
      rest.push_back(std::move(resolved[i]));
    }
  }
  return rest;
}

// The shortcut (cycle_summary.h): one reduction of summaries, and the cache positions every
// rank then runs without the coordinator; nothing when this cycle needs it.
std::optional<BackgroundLoop::Agreement> BackgroundLoop::agree(const CycleReport& report, bool grouped,
                                                               Clock::time_point now) {
  // Whether to exchange must not depend on a per-rank setting (a rank skipping the exchange
  // would leave the others waiting): the transport is the same everywhere; a rank without a
  // cache (DTRAIN_CACHE_CAPACITY=0) takes part and always needs the coordinator.
  const std::size_t capacity = transport_->summary_capacity();
  if (capacity == 0) return std::nullopt;
  CycleSummary summary;
  const bool held_too_long =
      std::any_of(held_.begin(), held_.end(), [&](const auto& held) { return now - held.second >= kLongestHold; });
  summary.needs_coordinator = !report.requests.empty() || report.shutdown || grouped || !plan_knobs_ || held_too_long ||
                              (coordinator_ && (!coordinator_->idle() || rank0_knobs() != *plan_knobs_));
  summary.cache_bits = report.cache_bits;
  const std::vector<SummaryRider> own = summary.needs_coordinator ? std::vector<SummaryRider>{} : riders();
  std::vector<char> combined = transport_->reduce_summaries(encode(summary, capacity, own), combine_summaries);
  std::optional<std::vector<std::uint32_t>> positions = agreed_positions(combined);
  if (!positions) return std::nullopt;
  Agreement agreement{std::move(*positions), std::move(combined), {}};
  agreement.ridden = ridden_allreduces(agreement.combined, config_.size);
  return agreement;
}

// The held allreduces of one host tensor each, in position order, while their data fits this
// rank's share of what the transport's summaries carry: each one's input, prescaled as the
// executor would scale it before an exchange.
std::vector<SummaryRider> BackgroundLoop::riders() {
  std::vector<SummaryRider> riders;
  const std::size_t share = transport_->summary_rider_bytes() / static_cast<std::size_t>(config_.size);
  if (share == 0) return riders;
  struct Candidate {
    std::uint32_t position;
    const Response* response;
    const TensorEntry* entry;
    std::size_t bytes;
  };
  std::vector<Candidate> candidates;
  std::size_t total = 0;
  for (const auto& [position, since] : held_) {
    const Response& response = cache_.response_at(position);
    if (response.type != OpType::kAllreduce || response.names.size() != 1 || response.sizes.size() != 1 ||
        response.device == DeviceType::kCUDA) {
      continue;
    }
    const auto entry = pending_.find(response.names.front());
    if (entry == pending_.end()) continue;
    const std::size_t bytes = static_cast<std::size_t>(response.sizes.front()) * element_size(response.dtype);
    if (bytes == 0 || total + bytes > share) continue;
    total += (bytes + 15) / 16 * 16;  // each rider's copy aligned for the scaling
    candidates.push_back({position, &response, &entry->second, bytes});
  }
  rider_data_.resize(total);
  std::size_t offset = 0;
  for (const Candidate& c : candidates) {
    char* data = rider_data_.data() + offset;
    std::memcpy(data, c.entry->input.data, c.bytes);
    scale_elements(c.response->dtype, data, c.bytes / element_size(c.response->dtype), c.response->prescale);
    riders.push_back({c.position, static_cast<std::uint32_t>(transport_->rank()), {data, c.bytes}});
    offset += (c.bytes + 15) / 16 * 16;
  }
  return riders;
}

// What the coordinator would plan from reports of these bits alone, with the settings of its
// latest plan. Rank 0's timeline shows their negotiation as the coordinator writes it.
CyclePlan BackgroundLoop::agreed_plan(const std::vector<std::uint32_t>& positions) {
  CyclePlan plan;
  plan.items.resize(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) {
    plan.items[i].cache_position = static_cast<std::int32_t>(positions[i]);
    if (timeline_) {
      const Response& response = cache_.response_at(positions[i]);
      const std::string& name = response.names.front();
      timeline_->begin(name, "NEGOTIATE_" + activity_name(response.type));
      for (int r = 0; r < config_.size; ++r) timeline_->instant(name, "rank " + std::to_string(r) + " ready");
      timeline_->end(name);
    }
  }
  plan.fusion_threshold_bytes = plan_knobs_->fusion_threshold_bytes;
  plan.cycle_time_ms = plan_knobs_->cycle_time_ms;
  return plan;
}

// Every rank's report to rank 0, whose coordinator plans; the plan back to every rank.
CyclePlan BackgroundLoop::negotiate(const CycleReport& report) {
  auto gathered = transport_->gather_to_coordinator(encode(report));
  if (!coordinator_) return decode_plan(transport_->broadcast_from_coordinator({}));
  std::vector<CycleReport> reports;
  reports.reserve(gathered.size());
  for (const auto& bytes : gathered) reports.push_back(decode_report(bytes));
  CyclePlan plan = coordinator_->plan(reports, Clock::now());
  const TunedKnobs knobs = rank0_knobs();
  plan.fusion_threshold_bytes = knobs.fusion_threshold_bytes;
  plan.cycle_time_ms = knobs.cycle_time_ms;
  transport_->broadcast_from_coordinator(encode(plan));
  return plan;
}

TunedKnobs BackgroundLoop::rank0_knobs() const {
  return autotuner_ ? autotuner_->knobs() : TunedKnobs{config_.fusion_threshold_bytes, config_.cycle_time_ms};
}

// Rank 0, while tuning: what this cycle reduced, for the autotuner's throughput samples.
void BackgroundLoop::feed_autotuner(const std::vector<Response>& executed) {
  std::vector<std::pair<std::string, std::size_t>> allreduces;
  for (const Response& r : executed) {
    if (!r.ok() || r.type != OpType::kAllreduce) continue;
    for (std::size_t i = 0; i < r.names.size() && i < r.sizes.size(); ++i) {
      allreduces.emplace_back(r.names[i], static_cast<std::size_t>(r.sizes[i]) * element_size(r.dtype));
    }
  }
  autotuner_->record(allreduces, Clock::now());
  if (autotuner_->finished()) {
    const TunedKnobs& tuned = autotuner_->knobs();
    log().info("autotune: fusion threshold {} bytes, cycle time {} ms", tuned.fusion_threshold_bytes,
               tuned.cycle_time_ms);
  }
}

std::vector<Response> BackgroundLoop::resolve(const CyclePlan& plan) {
  // Cached items refer to the cache as it was when the ranks reported, so read them all
  // before storing this plan's new responses (which may evict entries).
  std::vector<Response> responses;
  responses.reserve(plan.items.size());
  for (const auto& item : plan.items) {
    if (item.cache_position >= 0) {
      responses.push_back(cache_.response_at(static_cast<std::uint32_t>(item.cache_position)));
      cache_.touch(static_cast<std::uint32_t>(item.cache_position));
    } else {
      responses.push_back(item.response);
    }
  }
  for (const auto& item : plan.items) {
    if (item.cache_position < 0 && ResponseCache::cacheable(item.response)) cache_.put(item.response);
  }
  return responses;
}

}  // namespace dtrain::runtime
