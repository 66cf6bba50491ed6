// The runtime's timeline as the dashboard draws it, from complete and cut-short files.
#include "dashboard/timeline_reader.h"

#include <gtest/gtest.h>

namespace dtrain::dashboard {
namespace {

// As src/runtime/timeline.cc writes it: one event per line.
const char* kTrace = R"([
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"grad.w"}},
{"name":"NEGOTIATE_ALLREDUCE","ph":"B","ts":10,"pid":1,"tid":0},
{"name":"0","ph":"i","s":"p","ts":12,"pid":1,"tid":0},
{"ph":"E","ts":20,"pid":1,"tid":0},
{"name":"ALLREDUCE","ph":"B","ts":20,"pid":1,"tid":0},
{"name":"MEMCPY_IN_FUSION_BUFFER","ph":"B","ts":21,"pid":1,"tid":0},
{"ph":"E","ts":25,"pid":1,"tid":0},
{"ph":"E","ts":40,"pid":1,"tid":0},
{"name":"process_name","ph":"M","pid":2,"tid":0,"args":{"name":"grad.b"}},
{"name":"QUEUE","ph":"X","ts":5,"dur":3,"pid":2,"tid":0})";

TEST(TimelineReader, SpansNestPerTrackAndTracksAreNamed) {
  Timeline t = parse_timeline(std::string(kTrace) + "\n]\n");
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.skipped, 0u);
  ASSERT_EQ(t.tracks, (std::vector<std::string>{"grad.w", "grad.b"}));
  ASSERT_EQ(t.spans.size(), 4u);
  // By start: QUEUE (5), NEGOTIATE (10), ALLREDUCE (20), MEMCPY (21).
  EXPECT_EQ(t.activities[t.spans[0].activity], "QUEUE");
  EXPECT_EQ(t.spans[0].track, 1);
  EXPECT_EQ(t.spans[0].duration_us, 3);
  EXPECT_EQ(t.activities[t.spans[1].activity], "NEGOTIATE_ALLREDUCE");
  EXPECT_EQ(t.spans[1].duration_us, 10);
  EXPECT_EQ(t.activities[t.spans[2].activity], "ALLREDUCE");
  EXPECT_EQ(t.spans[2].start_us, 20);
  EXPECT_EQ(t.spans[2].duration_us, 20);
  EXPECT_EQ(t.activities[t.spans[3].activity], "MEMCPY_IN_FUSION_BUFFER");
  EXPECT_EQ(t.spans[3].duration_us, 4);
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(t.instants[0].name, "0");
  EXPECT_EQ(t.instants[0].time_us, 12);
}

TEST(TimelineReader, AFileStillBeingWrittenGivesWhatIsComplete) {
  // No closing bracket, an open span, and half an event at the end.
  Timeline t =
      parse_timeline(std::string(kTrace) +
                     ",\n{\"name\":\"ALLREDUCE\",\"ph\":\"B\",\"ts\":50,\"pid\":2,\"tid\":0},\n{\"ph\":\"E\",\"ts");
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.spans.size(), 4u);
  EXPECT_EQ(t.skipped, 2u);  // the half event and the span left open
}

TEST(TimelineReader, OtherLayoutsAndGarbage) {
  Timeline wrapped = parse_timeline(R"({"traceEvents":[{"name":"A","ph":"X","ts":1,"dur":2,"pid":7,"tid":0}]})");
  ASSERT_EQ(wrapped.spans.size(), 1u);
  EXPECT_EQ(wrapped.tracks, (std::vector<std::string>{"track 7"}));
  Timeline garbage = parse_timeline("not a trace\n{\"ph\":\"E\",\"ts\":3}\n");
  EXPECT_TRUE(garbage.spans.empty());
  EXPECT_TRUE(garbage.truncated);
  EXPECT_EQ(garbage.skipped, 2u);
  EXPECT_TRUE(parse_timeline("").spans.empty());
}

TEST(TimelineReader, EventsWithNumbersNoTraceHoldsOrFieldsOfTheWrongTypeAreSkipped) {
  // Found by fuzzing (tests/fuzz/dashboard_request): a timestamp of 5.6e62 was converted to an
  // integer, which is undefined; so was a pid beyond 2^63. Each such event is now skipped alone.
  Timeline t = parse_timeline(R"([
{"name":"A","ph":"X","ts":5.6e62,"dur":1,"pid":1,"tid":0},
{"name":"B","ph":"X","ts":1,"dur":1e300,"pid":1,"tid":0},
{"name":"C","ph":"X","ts":1,"dur":1,"pid":1e30,"tid":0},
{"name":"D","ph":"X","ts":1,"dur":1,"pid":"one","tid":0},
{"name":7,"ph":"X","ts":1,"dur":1,"pid":1,"tid":0},
{"name":"E","ph":"B","ts":-9007199254740992,"pid":1,"tid":0},
{"ph":"E","ts":9007199254740992,"pid":1,"tid":0},
{"name":"F","ph":"X","ts":18446744073709551615,"pid":1,"tid":0},
{"name":"process_name","ph":"M","pid":1,"args":{"name":3}},
{"name":"G","ph":"X","ts":2.5,"dur":3,"pid":1,"tid":0}
])");
  EXPECT_EQ(t.skipped, 6u);  // A, B, C, D, the nameless 7 and F
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_EQ(t.activities[t.spans[0].activity], "E");
  EXPECT_EQ(t.spans[0].duration_us, int64_t{1} << 54);  // the widest span two whole timestamps make
  EXPECT_EQ(t.activities[t.spans[1].activity], "G");
  EXPECT_EQ(t.spans[1].start_us, 2);
  EXPECT_EQ(t.tracks, (std::vector<std::string>{"track 1"}));  // the label that is no text is ignored
}

}  // namespace
}  // namespace dtrain::dashboard
