#include "runtime/timeline.h"

#include <nlohmann/json.hpp>

#include "dtrain/dtrain.h"

namespace dtrain::runtime {

using Clock = std::chrono::steady_clock;

Timeline::Timeline(const std::string& path, bool mark_cycles)
    : out_(path, std::ios::trunc), path_(path), origin_(Clock::now()), mark_cycles_(mark_cycles) {
  if (!out_) throw Error("dtrain: cannot open timeline file '" + path + "' for writing");
  out_ << "[\n";
}

Timeline::~Timeline() {
  for (const auto& [tensor, open] : open_spans_) {
    const int count = open;  // end() counts it down
    for (int i = 0; i < count; ++i) end(tensor);
  }
  out_ << "\n]\n";
  out_.close();
}

long long Timeline::micros(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count();
}

void Timeline::write_event(const std::string& json) {
  if (!first_event_) out_ << ",\n";
  first_event_ = false;
  out_ << json;
}

int Timeline::track_of(const std::string& tensor) {
  auto [it, inserted] = tracks_.emplace(tensor, static_cast<int>(tracks_.size()) + 1);
  if (inserted) {
    // Chrome shows one row ("process") per tensor, labelled with its name.
    write_event(nlohmann::json{
        {"name", "process_name"}, {"ph", "M"}, {"pid", it->second}, {"tid", 0}, {"args", {{"name", tensor}}}}
                    .dump());
  }
  return it->second;
}

void Timeline::begin(const std::string& tensor, const std::string& activity) {
  const int pid = track_of(tensor);
  ++open_spans_[tensor];
  write_event(
      nlohmann::json{{"name", activity}, {"ph", "B"}, {"ts", micros(Clock::now())}, {"pid", pid}, {"tid", 0}}.dump());
}

void Timeline::end(const std::string& tensor) {
  auto open = open_spans_.find(tensor);
  if (open == open_spans_.end() || open->second == 0) return;  // begun before this timeline started
  --open->second;
  const int pid = track_of(tensor);
  write_event(nlohmann::json{{"ph", "E"}, {"ts", micros(Clock::now())}, {"pid", pid}, {"tid", 0}}.dump());
}

void Timeline::instant(const std::string& tensor, const std::string& what) {
  const int pid = track_of(tensor);
  write_event(
      nlohmann::json{{"name", what}, {"ph", "i"}, {"s", "p"}, {"ts", micros(Clock::now())}, {"pid", pid}, {"tid", 0}}
          .dump());
}

void Timeline::span(const std::string& tensor, const std::string& activity, Clock::time_point start,
                    Clock::time_point stop) {
  const int pid = track_of(tensor);
  write_event(nlohmann::json{
      {"name", activity},
      {"ph", "X"},
      {"ts", micros(start)},
      {"dur", std::max<long long>(0, micros(stop) - micros(start))},
      {"pid", pid},
      {"tid", 0}}.dump());
}

void Timeline::mark_cycle(Clock::time_point start) {
  if (!mark_cycles_) return;
  const int pid = track_of("(cycles)");
  write_event(
      nlohmann::json{{"name", "CYCLE_START"}, {"ph", "i"}, {"s", "p"}, {"ts", micros(start)}, {"pid", pid}, {"tid", 0}}
          .dump());
}

void Timeline::flush() { out_.flush(); }

}  // namespace dtrain::runtime
