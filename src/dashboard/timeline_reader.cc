#include "dashboard/timeline_reader.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace dtrain::dashboard {
namespace {

using Json = nlohmann::ordered_json;

// Builds a Timeline event by event; tracks are keyed by (pid, tid) as Chrome does.
class TimelineBuilder {
 public:
  void add(const Json& event) {
    if (!event.is_object()) return skip();
    const std::string phase = event.value("ph", "");
    const auto key = std::make_pair(event.value("pid", 0LL), event.value("tid", 0LL));
    const auto ts = event.find("ts");
    if (phase == "M") {
      if (event.value("name", "") == "process_name" && event.contains("args") && event["args"].is_object()) {
        timeline_.tracks[track(key)] = event["args"].value("name", "");
      }
      return;
    }
    if (ts == event.end() || !ts->is_number()) return skip();
    const auto time_us = static_cast<int64_t>(ts->get<double>());
    if (phase == "B") {
      open_[key].push_back({activity(event.value("name", "")), time_us});
    } else if (phase == "E") {
      auto& stack = open_[key];
      if (stack.empty()) return skip();
      const auto [activity_index, start] = stack.back();
      stack.pop_back();
      timeline_.spans.push_back({track(key), activity_index, start, std::max<int64_t>(0, time_us - start)});
    } else if (phase == "X") {
      const auto duration = static_cast<int64_t>(event.value("dur", 0.0));
      timeline_.spans.push_back(
          {track(key), activity(event.value("name", "")), time_us, std::max<int64_t>(0, duration)});
    } else if (phase == "i" || phase == "I") {
      timeline_.instants.push_back({track(key), event.value("name", ""), time_us});
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
  using Key = std::pair<long long, long long>;
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
