#include "dashboard/timeline_reader.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace dtrain::dashboard {
namespace {

using Json = nlohmann::ordered_json;
using Key = std::pair<int64_t, int64_t>;  // (pid, tid)

// Timestamps, durations and ids are whole numbers within 2^53 (where doubles stop being whole:
// ~285 years of microseconds). Beyond it, or not finite, a number cannot be a trace's and
// would overflow on conversion or subtraction; such an event is skipped.
constexpr int64_t kLargestWhole = int64_t{1} << 53;

// A field that must be a whole number: absent gives `fallback`; another type or a number out of
// range gives nothing.
std::optional<int64_t> whole_number(const Json& event, const char* name, std::optional<int64_t> fallback) {
  const auto field = event.find(name);
  if (field == event.end()) return fallback;
  if (field->is_number_unsigned()) {
    const auto value = field->get<uint64_t>();
    if (value > static_cast<uint64_t>(kLargestWhole)) return std::nullopt;
    return static_cast<int64_t>(value);
  }
  if (field->is_number_integer()) {
    const auto value = field->get<int64_t>();
    if (value < -kLargestWhole || value > kLargestWhole) return std::nullopt;
    return value;
  }
  if (field->is_number_float()) {
    const double value = field->get<double>();
    if (!std::isfinite(value) || std::fabs(value) > static_cast<double>(kLargestWhole)) return std::nullopt;
    return static_cast<int64_t>(value);
  }
  return std::nullopt;
}

// A field that must be text: absent gives "", another type nothing.
std::optional<std::string> text(const Json& object, const char* name) {
  const auto field = object.find(name);
  if (field == object.end()) return std::string();
  if (!field->is_string()) return std::nullopt;
  return field->get<std::string>();
}

// Builds a Timeline event by event; tracks are keyed by (pid, tid) as Chrome does.
class TimelineBuilder {
 public:
  void add(const Json& event) {
    if (!event.is_object()) return skip();
    const auto phase = text(event, "ph");
    const auto name = text(event, "name");
    const auto pid = whole_number(event, "pid", 0);
    const auto tid = whole_number(event, "tid", 0);
    if (!phase || !name || !pid || !tid) return skip();
    const Key key{*pid, *tid};
    if (*phase == "M") {
      const auto args = event.find("args");
      if (*name == "process_name" && args != event.end() && args->is_object()) {
        if (const auto label = text(*args, "name")) timeline_.tracks[track(key)] = *label;
      }
      return;
    }
    const auto time_us = whole_number(event, "ts", std::nullopt);
    if (!time_us) return skip();
    if (*phase == "B") {
      open_[key].push_back({activity(*name), *time_us});
    } else if (*phase == "E") {
      auto& stack = open_[key];
      if (stack.empty()) return skip();
      const auto [activity_index, start] = stack.back();
      stack.pop_back();
      timeline_.spans.push_back({track(key), activity_index, start, std::max<int64_t>(0, *time_us - start)});
    } else if (*phase == "X") {
      const auto duration = whole_number(event, "dur", 0);
      if (!duration) return skip();
      timeline_.spans.push_back({track(key), activity(*name), *time_us, std::max<int64_t>(0, *duration)});
    } else if (*phase == "i" || *phase == "I") {
      timeline_.instants.push_back({track(key), *name, *time_us});
    } else {
      skip();
    }
  }

  void skip() { ++timeline_.skipped; }

  Timeline finish(bool truncated) {
    // Spans still open when the file ended are left out: their end is unknown.
    for (const auto& [key, stack] : open_) timeline_.skipped += stack.size();
    std::stable_sort(timeline_.spans.begin(), timeline_.spans.end(),
                     [](const TimelineSpan& a, const TimelineSpan& b) { return a.start_us < b.start_us; });
    timeline_.truncated = truncated;
    return std::move(timeline_);
  }

 private:
  int track(const Key& key) {
    auto [it, added] = tracks_.try_emplace(key, static_cast<int>(timeline_.tracks.size()));
    if (added) timeline_.tracks.push_back("track " + std::to_string(key.first));
    return it->second;
  }
  int activity(const std::string& name) {
    auto [it, added] = activities_.try_emplace(name, static_cast<int>(timeline_.activities.size()));
    if (added) timeline_.activities.push_back(name);
    return it->second;
  }

  Timeline timeline_;
  std::map<Key, int> tracks_;
  std::unordered_map<std::string, int> activities_;
  std::map<Key, std::vector<std::pair<int, int64_t>>> open_;
};

// The events of an array whose end may be missing. The runtime writes one event per line, so a
// file cut short still reads line by line (a complete file of any layout is parsed whole first).
bool add_line_by_line(const std::string& text, TimelineBuilder& builder) {
  bool saw_end = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    while (!line.empty() && (line.back() == ',' || line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    if (line.empty() || line == "[") continue;
    if (line == "]") {
      saw_end = true;
      continue;
    }
    Json event = Json::parse(line, nullptr, false);
    if (event.is_discarded()) {
      builder.skip();
      continue;
    }
    builder.add(event);
  }
  return saw_end;
}

}  // namespace

Timeline parse_timeline(const std::string& text) {
  TimelineBuilder builder;
  Json whole = Json::parse(text, nullptr, false);
  if (!whole.is_discarded()) {
    const Json* events = &whole;
    if (whole.is_object() && whole.contains("traceEvents")) events = &whole["traceEvents"];
    if (events->is_array()) {
      for (const auto& event : *events) builder.add(event);
      return builder.finish(false);
    }
  }
  const bool complete = add_line_by_line(text, builder);
  return builder.finish(!complete);
}

}  // namespace dtrain::dashboard
