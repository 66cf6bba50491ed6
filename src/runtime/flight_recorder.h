// A rank's flight recorder: a ring of its last collectives (DTRAIN_FLIGHT_RECORDER_ENTRIES,
// default 1024; 0 turns it off) with when each was submitted, started and finished. The thread
// that runs the cycles notes each operation as it leaves the queue (submitted) and as the
// executor runs it (started, finished). On a stall, a failed cycle or SIGUSR1 the rank writes
// what it holds: one line to stderr (flight_record::kLinePrefix + JSON: the collectives in
// flight and the last few finished), which `dtrain run` takes to print its verdict on the hang,
// and the whole ring to DTRAIN_FLIGHT_RECORDER_DIR/rank<R>.json when that is set.
//
// Its cost per collective is an uncontended lock and a copy of the name into a slot that keeps
// its capacity, at submission, and a few relaxed atomic stores after, with no clock read of its
// own: a collective is stamped with the start of the cycle that started or finished it (the
// verdict speaks in seconds). The writing thread reads states and times as they are; it holds
// the ring's lock while it copies the ring, which holds a submission back that long.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "concurrency/mutex.h"
#include "flight_record/flight_record.h"
#include "runtime/message.h"

namespace dtrain::runtime {

class FlightRecorder {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint64_t kNotRecorded = ~std::uint64_t{0};

  // `capacity` 0: nothing is recorded or written. `dir`: where write() puts the whole ring
  // (empty: nowhere, only the stderr line). `process_set`: the set whose loop records (its
  // collectives carry the name, its file is rank<R>.set-<name>.json, and SIGUSR1 stays the
  // job's recorder's); empty for the job's loop.
  FlightRecorder(std::size_t capacity, int rank, int size, std::string host, std::string dir,
                 std::string process_set = {});
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  bool enabled() const { return !slots_.empty(); }

  // The cycling thread, as a cycle begins: the time started() and finished() stamp.
  void new_cycle(Clock::time_point start);
  // A collective left the queue; returns the number to note its progress by (kNotRecorded when off).
  std::uint64_t submitted(const Request& request, Clock::time_point when);
  void started(std::uint64_t sequence);
  void finished(std::uint64_t sequence, bool ok);

  // What it holds now, oldest first (wall-clock times).
  flight_record::RankRecord snapshot(const std::string& reason) const;
  // The stderr line and, with a directory, the file. Never throws (it runs as a job fails).
  void write(const std::string& reason) const;

 private:
  struct Slot {
    std::atomic<std::uint64_t> sequence{kNotRecorded};
    // Written under mutex_ at submission, read under it by snapshot().
    std::string name;
    OpType type = OpType::kAllreduce;
    std::vector<std::int64_t> shape;
    DataType dtype = DataType::kFloat32;
    DeviceType device = DeviceType::kCPU;
    Clock::time_point submitted;
    // Written by the cycling thread alone, read by snapshot() as they are: 0 until reached.
    std::atomic<std::int64_t> started_ns{0};
    std::atomic<std::int64_t> finished_ns{0};
    std::atomic<bool> failed{false};
  };

  Slot* slot_of(std::uint64_t sequence);

  int rank_, size_;
  std::string host_, dir_, process_set_;
  mutable concurrency::Mutex mutex_;
  mutable concurrency::Mutex write_mutex_;  // one write() at a time (a failed cycle, SIGUSR1)
  std::vector<Slot> slots_;                 // sized once, a power of two; the slots' plain fields are guarded by mutex_
  std::uint64_t slot_mask_ = 0;
  std::int64_t cycle_start_ns_ = 1;  // the cycling thread's
  std::uint64_t next_sequence_ DTRAIN_GUARDED_BY(mutex_) = 0;
};

}  // namespace dtrain::runtime
