#include "runtime/flight_recorder.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "runtime/logging.h"
#include "runtime/record_on_signal.h"

namespace dtrain::runtime {
namespace {

// What goes on the stderr line: the oldest collectives in flight (what the verdict looks at
// first) and the newest finished ones (where the rank was), within what the launcher's relay
// takes as one line (64 KiB): a backward pass can have hundreds of gradients in flight.
constexpr std::size_t kFinishedOnTheLine = 8;
constexpr std::size_t kInFlightOnTheLine = 64;
constexpr std::size_t kLineBytes = 48 * 1024;

std::int64_t steady_ns(FlightRecorder::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// A ring of a power of two slots: the slot of a sequence number is a mask away, not a division.
std::size_t ring_size(std::size_t capacity) {
  std::size_t size = 1;
  while (size < capacity) size *= 2;
  return capacity == 0 ? 0 : size;
}

// Steady-clock nanoseconds to wall-clock microseconds, by the two clocks' offset now.
struct WallClock {
  std::int64_t offset_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count() -
      steady_ns(FlightRecorder::Clock::now());
  std::int64_t micros(std::int64_t steady) const { return steady == 0 ? 0 : (steady + offset_ns) / 1000; }
};

// The line's JSON: the oldest kInFlightOnTheLine in flight and the newest kFinishedOnTheLine
// finished, in the ring's order; then, should long names make it too long, the newest dropped
// until it fits.
std::string line_json(flight_record::RankRecord record) {
  std::vector<bool> keep(record.collectives.size(), false);
  std::size_t in_flight_left = kInFlightOnTheLine, finished_left = kFinishedOnTheLine;
  for (std::size_t i = 0; i < record.collectives.size() && in_flight_left > 0; ++i) {
    if (flight_record::in_flight(record.collectives[i])) keep[i] = (in_flight_left--, true);
  }
  for (std::size_t i = record.collectives.size(); i-- > 0 && finished_left > 0;) {
    if (!flight_record::in_flight(record.collectives[i])) keep[i] = (finished_left--, true);
  }
  std::vector<flight_record::CollectiveRecord> kept;
  for (std::size_t i = 0; i < record.collectives.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(record.collectives[i]));
  }
  record.collectives = std::move(kept);
  std::string json = flight_record::to_json(record);
  while (json.size() > kLineBytes && !record.collectives.empty()) {
    record.collectives.pop_back();
    json = flight_record::to_json(record);
  }
  return json;
}

// All of `bytes` to stderr in as few write()s as the kernel allows (no stdio buffer between).
void write_to_stderr(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

FlightRecorder::FlightRecorder(std::size_t capacity, int rank, int size, std::string host, std::string dir,
                               std::string process_set)
    : rank_(rank),
      size_(size),
      host_(std::move(host)),
      dir_(std::move(dir)),
      process_set_(std::move(process_set)),
      slots_(ring_size(capacity)) {
  slot_mask_ = slots_.empty() ? 0 : slots_.size() - 1;
  if (enabled() && process_set_.empty()) record_on_sigusr1(this);
}

FlightRecorder::~FlightRecorder() {
  if (enabled() && process_set_.empty()) forget_for_sigusr1(this);
}

void FlightRecorder::new_cycle(Clock::time_point start) { cycle_start_ns_ = steady_ns(start); }

FlightRecorder::Slot* FlightRecorder::slot_of(std::uint64_t sequence) {
  if (sequence == kNotRecorded || slots_.empty()) return nullptr;
  Slot& slot = slots_[sequence & slot_mask_];
  // Overwritten by a newer collective when the ring went round: then nothing to note.
  return slot.sequence.load(std::memory_order_relaxed) == sequence ? &slot : nullptr;
}

std::uint64_t FlightRecorder::submitted(const Request& request, Clock::time_point when) {
  if (!enabled()) return kNotRecorded;
  concurrency::MutexLock lock(mutex_);
  const std::uint64_t sequence = next_sequence_++;
  Slot& slot = slots_[sequence & slot_mask_];
  slot.sequence.store(sequence, std::memory_order_relaxed);
  slot.name.assign(request.name);  // into the capacity the slot kept: no allocation once warm
  slot.type = request.type;
  slot.shape.assign(request.shape.begin(), request.shape.end());
  slot.dtype = request.dtype;
  slot.device = request.device;
  slot.submitted = when;
  slot.started_ns.store(0, std::memory_order_relaxed);
  slot.finished_ns.store(0, std::memory_order_relaxed);
  slot.failed.store(false, std::memory_order_relaxed);
  return sequence;
}

void FlightRecorder::started(std::uint64_t sequence) {
  if (Slot* slot = slot_of(sequence)) slot->started_ns.store(cycle_start_ns_, std::memory_order_relaxed);
}

void FlightRecorder::finished(std::uint64_t sequence, bool ok) {
  if (Slot* slot = slot_of(sequence)) {
    slot->failed.store(!ok, std::memory_order_relaxed);
    slot->finished_ns.store(cycle_start_ns_, std::memory_order_release);  // `failed` before it
  }
}

flight_record::RankRecord FlightRecorder::snapshot(const std::string& reason) const {
  const WallClock wall;
  flight_record::RankRecord record;
  record.rank = rank_;
  record.size = size_;
  record.host = host_;
  record.pid = ::getpid();
  record.reason = reason;
  record.written_us = wall.micros(steady_ns(Clock::now()));
  concurrency::MutexLock lock(mutex_);
  const std::uint64_t end = next_sequence_;
  const std::uint64_t begin = end > slots_.size() ? end - slots_.size() : 0;
  for (std::uint64_t sequence = begin; sequence < end; ++sequence) {
    const Slot& slot = slots_[sequence & slot_mask_];
    flight_record::CollectiveRecord c;
    c.sequence = sequence;
    c.name = slot.name;
    c.operation = to_string(slot.type);
    c.shape = slot.shape;
    c.dtype = to_string(slot.dtype);
    c.device = to_string(slot.device);
    if (!process_set_.empty()) c.process_set = process_set_;
    c.submitted_us = wall.micros(steady_ns(slot.submitted));
    c.started_us = wall.micros(slot.started_ns.load(std::memory_order_relaxed));
    c.finished_us = wall.micros(slot.finished_ns.load(std::memory_order_acquire));
    using flight_record::CollectiveState;
    c.state = c.finished_us != 0  ? (slot.failed.load(std::memory_order_relaxed) ? CollectiveState::kFailed
                                                                                 : CollectiveState::kFinished)
              : c.started_us != 0 ? CollectiveState::kStarted
                                  : CollectiveState::kSubmitted;
    record.collectives.push_back(std::move(c));
  }
  return record;
}

void FlightRecorder::write(const std::string& reason) const {
  if (!enabled()) return;
  // A failed cycle and SIGUSR1 may both write at once: one after the other, each whole.
  concurrency::MutexLock writing(write_mutex_);
  try {
    const flight_record::RankRecord record = snapshot(reason);
    std::fflush(stderr);  // what stdio holds goes first, not into the middle of the line
    write_to_stderr(std::string(flight_record::kLinePrefix) + line_json(record) + "\n");
    if (dir_.empty()) return;
    std::filesystem::create_directories(dir_);
    const std::string file = "rank" + std::to_string(rank_) + (process_set_.empty() ? "" : ".set-" + process_set_);
    const std::filesystem::path path = std::filesystem::path(dir_) / (file + ".json");
    const std::filesystem::path partial = path.string() + ".partial";
    {
      std::ofstream out(partial, std::ios::trunc);
      out << flight_record::to_json(record) << '\n';
      if (!out) throw std::runtime_error("cannot write " + partial.string());
    }
    std::filesystem::rename(partial, path);  // a reader sees the old record or the new, whole
  } catch (const std::exception& e) {
    log().warn("flight recorder: could not write the record: {}", e.what());
  }
}

}  // namespace dtrain::runtime
