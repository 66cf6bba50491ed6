// The runtime's Chrome-trace timeline (src/runtime/timeline.cc) as the dashboard draws it:
// tracks (one per tensor, named by the trace's process_name metadata), spans (B/E pairs on a
// track, and X events) and instants. Read tolerantly: a timeline still being written has no
// closing bracket and may end in half an event; what parses is kept and `truncated` says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::dashboard {

struct TimelineSpan {
  int track = 0;
  int activity = 0;  // index into Timeline::activities
  int64_t start_us = 0;
  int64_t duration_us = 0;
};

struct TimelineInstant {
  int track = 0;
  std::string name;
  int64_t time_us = 0;
};

struct Timeline {
  std::vector<std::string> tracks;
  std::vector<std::string> activities;
  std::vector<TimelineSpan> spans;  // by start time
  std::vector<TimelineInstant> instants;
  bool truncated = false;  // the file did not end as a complete trace
  size_t skipped = 0;      // events that did not parse or had no matching begin
};

// Parses the text of a trace: a JSON array of events, or the array without its end.
Timeline parse_timeline(const std::string& text);

}  // namespace dtrain::dashboard
