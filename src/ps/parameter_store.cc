#include "ps/parameter_store.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace dtrain::ps {
namespace {

grpc::Status invalid(std::string message) { return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)}; }
grpc::Status precondition(std::string message) { return {grpc::StatusCode::FAILED_PRECONDITION, std::move(message)}; }

std::vector<float> floats_of(const std::string& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

}  // namespace

ParameterStore::ParameterStore(ParameterStoreOptions options) : options_(options) {}

grpc::Status ParameterStore::check_worker(int worker) const {
  if (workers_.empty()) return precondition(fmt::format("worker {} sent a request before registering", worker));
  if (worker < 0 || worker >= num_workers_) {
    return invalid(fmt::format("worker {} is not in [0, {})", worker, num_workers_));
  }
  const Worker& w = workers_[static_cast<size_t>(worker)];
  if (w.state == WorkerState::kDropped) {
    return precondition(fmt::format("parameter server {} dropped worker {} after {} s without a request",
                                    options_.server, worker, options_.worker_timeout_s));
  }
  if (w.state == WorkerState::kLeft) return precondition(fmt::format("worker {} has already left", worker));
  return grpc::Status::OK;
}

void ParameterStore::register_worker(int worker, int num_workers, const std::vector<PieceDeclaration>& pieces,
                                     const UpdateRuleSpec& rule, const std::vector<std::string>& initial_values,
                                     std::int64_t start_step, RegisterDone done) {
  concurrency::MutexLock lock(mutex_);
  auto fail = [&done](const grpc::Status& status) { done(status, 0); };
  if (num_workers < 1 || worker < 0 || worker >= num_workers) {
    return fail(invalid(fmt::format("worker {} of {} workers is not a valid worker", worker, num_workers)));
  }
  if (workers_.empty()) {
    num_workers_ = num_workers;
    layout_ = pieces;
    rule_ = rule;
    workers_.resize(static_cast<size_t>(num_workers));
    for (auto& w : workers_) w.last_seen = Clock::now();
  } else {
    if (num_workers != num_workers_) {
      return fail(invalid(fmt::format("worker {} says there are {} workers, an earlier worker said {}", worker,
                                      num_workers, num_workers_)));
    }
    if (pieces.size() != layout_.size()) {
      return fail(invalid(fmt::format("worker {} declares {} pieces on server {}, an earlier worker declared {}",
                                      worker, pieces.size(), options_.server, layout_.size())));
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (pieces[i].name != layout_[i].name || pieces[i].elements != layout_[i].elements) {
        return fail(
            invalid(fmt::format("worker {} declares piece {} as '{}' ({} elements), an earlier worker as "
                                "'{}' ({} elements): the workers' models differ",
                                worker, i, pieces[i].name, pieces[i].elements, layout_[i].name, layout_[i].elements)));
      }
    }
    if (!(rule == rule_)) {
      return fail(invalid(fmt::format("worker {} declares optimizer {}, an earlier worker {}", worker, rule.describe(),
                                      rule_.describe())));
    }
  }
  Worker& w = workers_[static_cast<size_t>(worker)];
  if (w.state == WorkerState::kDropped) {
    return fail(precondition(fmt::format("worker {} registered after parameter server {} gave up waiting for it ({} s)",
                                         worker, options_.server, registration_grace_s())));
  }
  if (w.state != WorkerState::kExpected) {
    return fail(
        precondition(fmt::format("worker {} registered twice with parameter server {}", worker, options_.server)));
  }
  if (worker == 0) {
    if (initial_values.size() != pieces.size()) {
      return fail(
          invalid(fmt::format("the chief sent {} initial values for {} pieces", initial_values.size(), pieces.size())));
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (initial_values[i].size() != static_cast<size_t>(pieces[i].elements) * sizeof(float)) {
        return fail(invalid(fmt::format("the chief's initial value of '{}' has {} bytes, expected {}", pieces[i].name,
                                        initial_values[i].size(), pieces[i].elements * 4)));
      }
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
      Piece& piece = pieces_[pieces[i].name];
      concurrency::MutexLock piece_lock(piece.mutex);
      piece.values = floats_of(initial_values[i]);
      piece.elements = piece.values.size();
    }
    start_step_ = start_step;
    initialized_ = true;
  }
  w.state = WorkerState::kLive;
  w.last_seen = Clock::now();
  if (!initialized_) {
    registrations_waiting_.push_back(std::move(done));
    return;
  }
  done(grpc::Status::OK, start_step_);
  for (auto& waiting : registrations_waiting_) waiting(grpc::Status::OK, start_step_);
  registrations_waiting_.clear();
}

void ParameterStore::apply(Piece& piece, double learning_rate, const float* gradient) {
  apply_update(rule_, learning_rate, gradient, piece.values.data(), static_cast<std::int64_t>(piece.values.size()),
               piece.state);
  ++piece.version;
}

bool ParameterStore::may_proceed(std::int64_t step) const {
  if (options_.staleness < 0) return true;
  std::int64_t slowest = step;
  for (const auto& w : workers_) {
    if (participating(w)) slowest = std::min(slowest, w.clock);
  }
  return step - slowest <= options_.staleness;
}

void ParameterStore::push(int worker, std::int64_t step, double learning_rate, const std::string& piece_name,
                          const std::string& gradient_bytes, PushDone done) {
  static const std::vector<float> kNone;
  concurrency::MutexLock lock(mutex_);
  if (grpc::Status status = check_worker(worker); !status.ok()) return done(status, 0, kNone);
  if (!initialized_) return done(precondition("push before the chief initialised the parameters"), 0, kNone);
  auto it = pieces_.find(piece_name);
  if (it == pieces_.end()) {
    return done(invalid(fmt::format("parameter server {} holds no piece '{}'", options_.server, piece_name)), 0, kNone);
  }
  Piece& piece = it->second;
  if (gradient_bytes.size() != piece.elements * sizeof(float)) {
    return done(invalid(fmt::format("gradient of '{}' from worker {} has {} bytes, expected {}", piece_name, worker,
                                    gradient_bytes.size(), piece.elements * sizeof(float))),
                0, kNone);
  }
  Worker& w = workers_[static_cast<size_t>(worker)];
  w.last_seen = Clock::now();
  const bool clock_advanced = step > w.clock;
  w.clock = std::max(w.clock, step);

  if (options_.mode == UpdateMode::kSync) {
    if (piece.round_step && *piece.round_step != step) {
      return done(invalid(fmt::format("worker {} pushed '{}' for step {} while step {} is being averaged", worker,
                                      piece_name, step, *piece.round_step)),
                  0, kNone);
    }
    if (piece.round_gradients.count(worker)) {
      return done(invalid(fmt::format("worker {} pushed '{}' twice for step {}", worker, piece_name, step)), 0, kNone);
    }
    if (!piece.round_step) {
      piece.round_step = step;
      piece.round_learning_rate = learning_rate;
    }
    const float* g = reinterpret_cast<const float*>(gradient_bytes.data());
    piece.round_gradients[worker].assign(g, g + piece.elements);
    piece.round_waiters.push_back(std::move(done));
    try_finish_rounds();
    return;
  }

  if (!may_proceed(step)) {
    stale_waiters_.emplace_back(piece_name, PendingPush{worker, step, learning_rate, gradient_bytes, std::move(done)});
    return;
  }
  concurrency::MutexLock piece_lock(piece.mutex);
  const float* gradient = reinterpret_cast<const float*>(gradient_bytes.data());
  if (!clock_advanced || stale_waiters_.empty()) {
    // Nothing else to do under the store's lock: let pushes of other pieces apply in parallel.
    lock.unlock();
    apply(piece, learning_rate, gradient);
    done(grpc::Status::OK, piece.version, piece.values);
    return;
  }
  apply(piece, learning_rate, gradient);
  done(grpc::Status::OK, piece.version, piece.values);
  piece_lock.unlock();
  release_stale_waiters();  // this push may have been the one they wait for
}

void ParameterStore::try_finish_rounds() {
  for (auto& [name, piece] : pieces_) {
    if (!piece.round_step) continue;
    bool complete = true;
    for (size_t w = 0; w < workers_.size(); ++w) {
      if (participating(workers_[w]) && !piece.round_gradients.count(static_cast<int>(w))) complete = false;
    }
    if (!complete) continue;
    concurrency::MutexLock piece_lock(piece.mutex);
    // Summed in worker order (the map's), then scaled as allreduce's average is.
    std::vector<float> average(piece.values.size(), 0.0f);
    for (const auto& [worker, gradient] : piece.round_gradients) {
      for (size_t i = 0; i < average.size(); ++i) average[i] += gradient[i];
    }
    const float scale = 1.0f / static_cast<float>(piece.round_gradients.size());
    for (float& g : average) g *= scale;
    apply(piece, piece.round_learning_rate, average.data());
    for (auto& waiter : piece.round_waiters) waiter(grpc::Status::OK, piece.version, piece.values);
    piece.round_waiters.clear();
    piece.round_gradients.clear();
    piece.round_step.reset();
  }
}

void ParameterStore::release_stale_waiters() {
  // Oldest first, so waiting pushes are applied in the order they arrived.
  std::vector<std::pair<std::string, PendingPush>> still_waiting;
  for (auto& [name, pending] : stale_waiters_) {
    if (!may_proceed(pending.step) || workers_[static_cast<size_t>(pending.worker)].state == WorkerState::kDropped) {
      if (workers_[static_cast<size_t>(pending.worker)].state == WorkerState::kDropped) {
        pending.done(check_worker(pending.worker), 0, {});
      } else {
        still_waiting.emplace_back(std::move(name), std::move(pending));
      }
      continue;
    }
    Piece& piece = pieces_.at(name);
    concurrency::MutexLock piece_lock(piece.mutex);
    apply(piece, pending.learning_rate, reinterpret_cast<const float*>(pending.gradient.data()));
    pending.done(grpc::Status::OK, piece.version, piece.values);
  }
  stale_waiters_ = std::move(still_waiting);
}

grpc::Status ParameterStore::pull(int worker, const std::vector<std::string>& names, std::vector<std::string>& values) {
  concurrency::MutexLock lock(mutex_);
  if (grpc::Status status = check_worker(worker); !status.ok()) return status;
  if (!initialized_) return precondition("pull before the chief initialised the parameters");
  workers_[static_cast<size_t>(worker)].last_seen = Clock::now();
  for (const auto& name : names) {
    auto it = pieces_.find(name);
    if (it == pieces_.end())
      return invalid(fmt::format("parameter server {} holds no piece '{}'", options_.server, name));
    concurrency::MutexLock piece_lock(it->second.mutex);
    values.emplace_back(reinterpret_cast<const char*>(it->second.values.data()),
                        it->second.values.size() * sizeof(float));
  }
  return grpc::Status::OK;
}

grpc::Status ParameterStore::heartbeat(int worker, bool leaving, int& live_workers) {
  concurrency::MutexLock lock(mutex_);
  if (grpc::Status status = check_worker(worker); !status.ok()) return status;
  Worker& w = workers_[static_cast<size_t>(worker)];
  w.last_seen = Clock::now();
  if (leaving) {
    w.state = WorkerState::kLeft;
    try_finish_rounds();
    release_stale_waiters();
  }
  live_workers = static_cast<int>(std::count_if(workers_.begin(), workers_.end(),
                                                [](const Worker& each) { return each.state == WorkerState::kLive; }));
  return grpc::Status::OK;
}

void ParameterStore::abort_waiting(const grpc::Status& status) {
  concurrency::MutexLock lock(mutex_);
  for (auto& waiting : registrations_waiting_) waiting(status, 0);
  registrations_waiting_.clear();
  for (auto& [name, piece] : pieces_) {
    for (auto& waiter : piece.round_waiters) waiter(status, 0, {});
    piece.round_waiters.clear();
    piece.round_gradients.clear();
    piece.round_step.reset();
  }
  for (auto& [name, pending] : stale_waiters_) pending.done(status, 0, {});
  stale_waiters_.clear();
}

void ParameterStore::drop(int worker, const std::string& why) {
  workers_[static_cast<size_t>(worker)].state = WorkerState::kDropped;
  int remaining = 0;
  for (const auto& w : workers_) remaining += participating(w) ? 1 : 0;
  std::fprintf(stderr, "dtrain ps-server %d: dropping worker %d (%s); continuing with %d worker%s\n", options_.server,
               worker, why.c_str(), remaining, remaining == 1 ? "" : "s");
  std::fflush(stderr);
}

void ParameterStore::check_liveness(Clock::time_point now) {
  concurrency::MutexLock lock(mutex_);
  auto seconds = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  bool dropped = false;
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker& w = workers_[i];
    if (!participating(w)) continue;
    const bool registered = w.state == WorkerState::kLive;
    if (now - w.last_seen <= seconds(registered ? options_.worker_timeout_s : registration_grace_s())) continue;
    drop(static_cast<int>(i),
         registered ? fmt::format("no request for {} s", options_.worker_timeout_s)
                    : fmt::format("it did not register within {} s of the first worker", registration_grace_s()));
    dropped = true;
  }
  if (dropped) {
    try_finish_rounds();
    release_stale_waiters();
  }
}

}  // namespace dtrain::ps
