// Elastic training: a job that goes on when workers are lost and takes in workers that join.
//
// The launcher (`dtrain run --min-np N --max-np M`, docs/elastic.md) keeps the job going while
// at least N workers live; each time the membership changes it forms a new world (a round) and
// numbers the ranks again. A training loop takes part through a State and run():
//
//   MyState state(model, optimizer);          // a State: what must survive a reset
//   dtrain::elastic::run(state, [&] {
//     for (; state.step < steps; ++state.step) {
//       train_one_step();
//       if (state.step % 10 == 0) state.commit();   // cheap: a copy in memory
//     }
//   });
//
// When a worker is lost, every survivor's pending operation fails with WorkersLostError; run()
// shuts the runtime down, joins the next round, restores the state to its last commit, calls
// the reset callbacks, syncs the state from rank 0 (the lowest surviving rank) and calls the
// function again. When workers wait to join, commit() raises HostsUpdated on every rank at
// the same commit, and run() does the same without restoring. Outside an elastic job run()
// is init(), sync() and the function.
#pragma once

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/error.h"

namespace dtrain::elastic {

// True when `dtrain run --min-np/--max-np` started this process as an elastic worker.
bool enabled();

// Raised by State::commit() on every rank when started workers wait to join the world.
class HostsUpdated : public std::exception {
 public:
  const char* what() const noexcept override { return "dtrain: elastic: workers wait to join the world"; }
};

// What changed at a reset, for reset callbacks and progress lines.
struct WorldChange {
  int round = 0;          // the new world's round (rounds count up from 1)
  int previous_size = 0;  // ranks before the change
  int size = 0;           // ranks now
  bool restored = false;  // the state went back to its last commit (a worker was lost)
  std::string reason;     // the lost worker's error, or that workers joined
};

// What a training loop must not lose. Subclasses say how to save, restore and sync their
// parts (dtrain::libtorch::TorchState holds a model, an optimizer and a sampler's position).
class State {
 public:
  virtual ~State() = default;

  // Saves the state in memory (save()), then, in an elastic job, asks whether workers wait to
  // join: rank 0 reads the launcher's answer and tells every rank, so all raise HostsUpdated
  // at the same commit. Collective in an elastic job: every rank must commit at the same steps.
  void commit();
  // The second half of commit() alone.
  void check_host_updates();
  // `callback` runs after each new world is formed, before sync() (e.g. to scale the learning
  // rate with the world's size, or to reshard data).
  void on_reset(std::function<void(const WorldChange&)> callback);
  // How many commits this process made (restores do not count them back).
  long commits() const { return commits_; }

  // The subclass's parts. save() copies into memory; restore() returns to the last save();
  // sync() makes every rank's state rank 0's (collective; new workers have no state yet).
  virtual void save() = 0;
  virtual void restore() = 0;
  virtual void sync() = 0;

  // For run(): calls the reset callbacks in order of registration.
  void notify_reset(const WorldChange& change);

 private:
  std::vector<std::function<void(const WorldChange&)>> callbacks_;
  long commits_ = 0;
};

// Runs `train` to its end across membership changes, as described above. Initialises the
// runtime itself. Errors other than WorkersLostError (a mismatch between ranks, the program's
// own) end it as they would without elasticity; the launcher bounds the number of resets.
void run(State& state, const std::function<void()>& train);

}  // namespace dtrain::elastic
