#include "runtime/timeline.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <map>
#include <nlohmann/json.hpp>

#include "dtrain/dtrain.h"
#include "tests/support/temp_dir.h"

namespace dtrain::runtime {
namespace {

TEST(Timeline, WritesChromeTraceJsonWithOneTrackPerTensor) {
  const dtrain::testing::TempDir dir;
  const std::filesystem::path path = dir.path() / "timeline.json";
  {
    Timeline timeline(path.string());
    timeline.begin("grad/w", "NEGOTIATE_ALLREDUCE");
    timeline.instant("grad/w", "rank 1 ready");
    timeline.end("grad/w");
    timeline.begin("grad/b", "ALLREDUCE");
    timeline.end("grad/b");
    const auto now = std::chrono::steady_clock::now();
    timeline.span("grad/w", "QUEUE", now - std::chrono::milliseconds(2), now);
  }
  std::ifstream in(path);
  const auto events = nlohmann::json::parse(in);  // throws if the file is not valid JSON
  ASSERT_TRUE(events.is_array());
  std::map<std::string, int> tracks;
  int begins = 0, ends = 0;
  for (const auto& e : events) {
    if (e["ph"] == "M") tracks[e["args"]["name"]] = e["pid"];
    if (e["ph"] == "B") ++begins;
    if (e["ph"] == "E") ++ends;
    if (e["ph"] == "X") {
      EXPECT_GE(e["dur"].get<long long>(), 1900);
    }
  }
  EXPECT_EQ(tracks.size(), 2u);
  EXPECT_NE(tracks["grad/w"], tracks["grad/b"]);
  EXPECT_EQ(begins, 2);
  EXPECT_EQ(ends, 2);
}

// Started or stopped while tensors are in flight, a timeline still holds matched spans.
TEST(Timeline, SpansCutByStartOrStopAreLeftOutOrClosed) {
  const dtrain::testing::TempDir dir;
  const std::filesystem::path path = dir.path() / "timeline.json";
  for (bool mark_cycles : {false, true}) {
    {
      Timeline timeline(path.string(), mark_cycles);
      timeline.end("begun.before.start");
      timeline.begin("open.at.stop", "ALLREDUCE");
      timeline.begin("open.at.stop", "COMMUNICATE");
      timeline.mark_cycle(std::chrono::steady_clock::now());
    }
    std::ifstream in(path);
    const auto events = nlohmann::json::parse(in);
    std::map<std::string, int> begins, ends;
    std::map<int, std::string> track_names;
    int marks = 0;
    for (const auto& e : events) {
      if (e["ph"] == "M") track_names[e["pid"]] = e["args"]["name"];
    }
    for (const auto& e : events) {
      if (e["ph"] == "B") ++begins[track_names[e["pid"]]];
      if (e["ph"] == "E") ++ends[track_names[e["pid"]]];
      if (e.contains("name") && e["name"] == "CYCLE_START") ++marks;
    }
    EXPECT_EQ(ends["begun.before.start"], 0);
    EXPECT_EQ(begins["open.at.stop"], 2);
    EXPECT_EQ(ends["open.at.stop"], 2);
    EXPECT_EQ(marks, mark_cycles ? 1 : 0);
  }
}

TEST(Timeline, UnwritablePathIsANamedError) {
  try {
    Timeline timeline("/nonexistent-dir/t.json");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/t.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace dtrain::runtime
