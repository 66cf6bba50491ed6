// dtrain::ProcessSet and the functions that add and remove sets. A set is a world of its own
// among its members: its own transport (transport_factory.h, connected under the set's key)
// and its own BackgroundLoop, so its negotiation, fusion, cache and stall inspection are
// separate from the job's and from other sets', and its operations run beside theirs.
#include <algorithm>
#include <map>

#include "runtime/process_set_state.h"
#include "runtime/process_sets.h"
#include "runtime/transport/mpi/mpi_transport.h"
#include "runtime/transport/transport_factory.h"

namespace dtrain {

namespace {

using runtime::BackgroundLoop;

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

concurrency::Mutex registry_mutex;
// The running init()'s sets, in the order they were added; ended ones leave it.
std::vector<std::shared_ptr<detail::ProcessSetState>> registered DTRAIN_GUARDED_BY(registry_mutex);
int numbered DTRAIN_GUARDED_BY(registry_mutex) = 0;  // add_process_set's sets so far
// How often each set (name and members) was connected under this init(): a set connected again
// after its removal meets under a rendezvous key of its own, never the last one's stale
// addresses. Its members connect it equally often, so they agree on the count.
std::map<std::string, int> connections DTRAIN_GUARDED_BY(registry_mutex);
int shutdowns DTRAIN_GUARDED_BY(registry_mutex) = 0;  // end_process_sets() calls: a set connected across one is stale

// Every rank's `bytes`, in rank order, under a name users cannot submit: the agreement before
// a set is added.
std::vector<std::string> allgather_reserved(const std::string& bytes, const std::string& name) {
  const CollectiveResult gathered = runtime::allgather_reserved(
      name, TensorView{const_cast<char*>(bytes.data()), DataType::kUInt8, {static_cast<std::int64_t>(bytes.size())}});
  std::vector<std::string> everyone;
  const char* data = static_cast<const char*>(gathered.output().data);
  for (std::int64_t length : gathered.received_splits()) {
    everyone.emplace_back(data, static_cast<std::size_t>(length));
    data += length;
  }
  return everyone;
}

// "ranks 0,1 pass [0,2]; rank 2 passes [1,2]", or empty when every rank passed the same.
std::string disagreement(const std::vector<std::string>& passed) {
  std::map<std::string, std::vector<int>> ranks_by_list;
  std::vector<std::string> order;
  for (std::size_t r = 0; r < passed.size(); ++r) {
    if (!ranks_by_list.contains(passed[r])) order.push_back(passed[r]);
    ranks_by_list[passed[r]].push_back(static_cast<int>(r));
  }
  if (order.size() <= 1) return {};
  std::string out;
  for (const std::string& list : order) {
    const std::vector<int>& ranks = ranks_by_list[list];
    out += (out.empty() ? "" : "; ") + std::string(ranks.size() == 1 ? "rank " : "ranks ") + rank_list(ranks) +
           (ranks.size() == 1 ? " passes [" : " pass [") + list + "]";
  }
  return out;
}

// The members, ascending; throws naming what is wrong with `ranks`.
std::vector<int> checked_members(std::vector<int> ranks, int job_size, const std::string& what) {
  if (ranks.empty()) throw Error(what + ": a process set needs at least one rank");
  for (int r : ranks) {
    if (r < 0 || r >= job_size) {
      throw Error(what + ": rank " + std::to_string(r) + " is outside 0.." + std::to_string(job_size - 1));
    }
  }
  std::sort(ranks.begin(), ranks.end());
  if (auto repeated = std::adjacent_find(ranks.begin(), ranks.end()); repeated != ranks.end()) {
    throw Error(what + ": rank " + std::to_string(*repeated) + " is listed twice");
  }
  return ranks;
}

// Marks `state` ended with `why` and returns its loop (null for a non-member) to be stopped.
std::shared_ptr<BackgroundLoop> end(detail::ProcessSetState& state, const std::string& why) {
  concurrency::MutexLock lock(state.mutex);
  state.ended = why;
  return std::move(state.loop);
}

// A member's loop's configuration: the job's, with the set's world in place of the job's.
runtime::RuntimeConfig member_config(const runtime::RuntimeConfig& job, const detail::ProcessSetState& state) {
  runtime::RuntimeConfig config = job;
  config.rank = state.rank;
  config.size = static_cast<int>(state.ranks.size());
  config.process_set = state.name;
  config.members = state.ranks;
  config.job_size = job.size;
  config.timeline_path.clear();  // the job's timeline is rank 0's file; a set's loop writes none
  config.autotune = false;       // the autotuner tunes the job's loop
  return config;
}

// Connects the members (collective over them) and registers the set.
ProcessSet start_set(const runtime::RuntimeConfig& job, const std::string& name, std::vector<int> members) {
  auto state = std::make_shared<detail::ProcessSetState>();
  state->name = name;
  state->job_rank = job.rank;
  const auto place = std::find(members.begin(), members.end(), job.rank);
  state->rank = place == members.end() ? -1 : static_cast<int>(place - members.begin());
  state->ranks = std::move(members);
  std::string rendezvous_key;
  int shutdowns_before = 0;
  {
    concurrency::MutexLock lock(registry_mutex);
    shutdowns_before = shutdowns;
    rendezvous_key = name + "." + std::to_string(connections[name + "/" + rank_list(state->ranks)]++);
  }
  if (state->rank >= 0) {
    runtime::RuntimeConfig config = member_config(job, *state);
    std::unique_ptr<runtime::Transport> transport;
    try {
      transport = runtime::connect_process_set_transport(config, job.generation, rendezvous_key, state->ranks);
    } catch (const Error& e) {
      // As for the job's world: a member lost while an elastic world's set forms is a lost worker.
      if (job.elastic_worker >= 0) throw WorkersLostError(e.what());
      throw;
    }
    auto loop = std::make_shared<BackgroundLoop>(std::move(config), std::move(transport));
    concurrency::MutexLock lock(state->mutex);
    state->loop = std::move(loop);
  }
  std::shared_ptr<BackgroundLoop> stale;
  {
    concurrency::MutexLock lock(registry_mutex);
    if (shutdowns == shutdowns_before) {
      registered.push_back(state);
      return ProcessSet(state);
    }
    stale = end(*state, "ended with dtrain::shutdown()");
  }
  // shutdown() ran on another thread while the members connected: the set belongs to no init().
  if (stale) stale->stop();
  throw Error("dtrain: process set " + name + ": dtrain was shut down while the set was being added");
}

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::string ProcessSet::name() const { return state_ ? state_->name : "global"; }

std::vector<int> ProcessSet::ranks() const {
  if (state_) return state_->ranks;
  std::vector<int> everyone(static_cast<std::size_t>(dtrain::size()));
  for (std::size_t r = 0; r < everyone.size(); ++r) everyone[r] = static_cast<int>(r);
  return everyone;
}

bool ProcessSet::included() const { return !state_ || state_->rank >= 0; }
int ProcessSet::rank() const { return state_ ? state_->rank : dtrain::rank(); }
int ProcessSet::size() const { return state_ ? static_cast<int>(state_->ranks.size()) : dtrain::size(); }

std::string ProcessSet::describe() const {
  return state_ ? "process set " + state_->name + " (ranks " + rank_list(state_->ranks) + ")"
                : "the global process set";
}

ProcessSet add_process_set(std::vector<int> ranks) {
  const std::string what = "dtrain::add_process_set";
  const std::shared_ptr<BackgroundLoop> job = runtime::job_loop("add_process_set");
  // The ranks are compared before they are checked, so that whatever a rank passed, every
  // rank raises the same error instead of some waiting for the others.
  std::sort(ranks.begin(), ranks.end());  // in any order
  const std::string passed = rank_list(ranks);
  if (std::string differ = disagreement(allgather_reserved(passed, "__dtrain.add_process_set")); !differ.empty()) {
    throw Error(what + ": the ranks differ across ranks: " + differ);
  }
  std::vector<int> members = checked_members(std::move(ranks), job->config().size, what);
  if (job->config().launched_by_mpirun && !runtime::MpiTransport::threads_multiple()) {
    throw Error(what +
                ": this MPI does not provide MPI_THREAD_MULTIPLE, which a process set's background thread "
                "needs beside the job's (start the ranks with dtrain run instead of mpirun)");
  }
  std::string name;
  {
    concurrency::MutexLock lock(registry_mutex);
    // Only add_process_set's sets are on every rank's list (connect_process_set's are on their
    // members' only), so only they decide alike everywhere.
    for (const auto& set : registered) {
      if (all_digits(set->name) && set->ranks == members) {
        throw Error(what + ": " + ProcessSet(set).describe() + " has these ranks already");
      }
    }
    name = std::to_string(++numbered);
  }
  return start_set(job->config(), name, std::move(members));
}

ProcessSet connect_process_set(const std::string& key, std::vector<int> ranks) {
  const std::string what = "dtrain::connect_process_set";
  const std::shared_ptr<BackgroundLoop> job = runtime::job_loop("connect_process_set");
  if (key.empty() || all_digits(key)) {
    throw Error(what + ": the key '" + key +
                "' must be a non-empty name, not a number (numbers name add_process_set's sets)");
  }
  std::vector<int> members = checked_members(std::move(ranks), job->config().size, what);
  if (!std::binary_search(members.begin(), members.end(), job->config().rank)) {
    throw Error(what + ": rank " + std::to_string(job->config().rank) + " is not among ranks " + rank_list(members) +
                "; only a set's members call connect_process_set");
  }
  {
    concurrency::MutexLock lock(registry_mutex);
    for (const auto& set : registered) {
      if (set->name == key) throw Error(what + ": a process set named '" + key + "' exists already");
    }
  }
  return start_set(job->config(), key, std::move(members));
}

void remove_process_set(const ProcessSet& set) {
  if (set.is_global()) throw Error("dtrain::remove_process_set: the global process set cannot be removed");
  std::shared_ptr<BackgroundLoop> loop;
  {
    concurrency::MutexLock lock(set.state()->mutex);
    if (!set.state()->ended.empty()) {
      throw Error("dtrain::remove_process_set: " + set.describe() + " " + set.state()->ended);
    }
    set.state()->ended = "was removed";
    loop = std::move(set.state()->loop);
  }
  {
    concurrency::MutexLock lock(registry_mutex);
    std::erase(registered, set.state());
  }
  if (loop) loop->stop();
}

namespace runtime {

std::shared_ptr<BackgroundLoop> process_set_loop(const ProcessSet& set, const std::string& what) {
  detail::ProcessSetState& state = *set.state();
  concurrency::MutexLock lock(state.mutex);
  if (!state.ended.empty()) throw Error(what + ": " + set.describe() + " " + state.ended);
  if (!state.loop) {
    throw Error(what + ": rank " + std::to_string(state.job_rank) + " is not in " + set.describe());
  }
  return state.loop;
}

void end_process_sets() {
  std::vector<std::shared_ptr<detail::ProcessSetState>> ending;
  {
    concurrency::MutexLock lock(registry_mutex);
    ending.swap(registered);
    numbered = 0;
    connections.clear();
    ++shutdowns;
  }
  for (const auto& state : ending) {
    if (std::shared_ptr<BackgroundLoop> loop = end(*state, "ended with dtrain::shutdown()")) loop->stop();
  }
}

}  // namespace runtime

}  // namespace dtrain
