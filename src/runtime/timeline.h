// Writes a Chrome-trace JSON file (chrome://tracing, Perfetto) of what the runtime did to
// each tensor: negotiation (with the moment each rank became ready), time queued, fusion
// copies and communication. Only rank 0 writes one; it is driven from the background thread
// alone, so it needs no locking. It may start and stop while tensors are in flight (see
// dtrain::start_timeline): an end() whose begin() it did not see writes nothing, and spans
// still open at close are ended then, so every file holds matched spans.
#pragma once

#include <chrono>
#include <fstream>
#include <string>
#include <unordered_map>

namespace dtrain::runtime {

class Timeline {
 public:
  // `mark_cycles`: mark_cycle() writes a marker (else it does nothing).
  explicit Timeline(const std::string& path, bool mark_cycles = false);
  ~Timeline();  // ends open spans and closes the JSON array so the file is valid JSON
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  // Phases of one tensor. `begin`/`end` nest per tensor; `instant` marks a point in time.
  void begin(const std::string& tensor, const std::string& activity);
  void end(const std::string& tensor);
  void instant(const std::string& tensor, const std::string& what);
  // A span that began earlier (e.g. when the user submitted the tensor).
  void span(const std::string& tensor, const std::string& activity, std::chrono::steady_clock::time_point start,
            std::chrono::steady_clock::time_point stop);

  // The start of a negotiation cycle that had work, on a track of its own.
  void mark_cycle(std::chrono::steady_clock::time_point start);

  void flush();

 private:
  int track_of(const std::string& tensor);
  long long micros(std::chrono::steady_clock::time_point t) const;
  void write_event(const std::string& json);

  std::ofstream out_;
  std::string path_;
  std::chrono::steady_clock::time_point origin_;
  std::unordered_map<std::string, int> tracks_;
  std::unordered_map<std::string, int> open_spans_;  // per tensor: begin()s not yet ended
  bool mark_cycles_;
  bool first_event_ = true;
};

}  // namespace dtrain::runtime
