#include "runtime/flight_recorder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "flight_record/flight_record.h"
#include "tests/support/temp_dir.h"

namespace dtrain::runtime {
namespace {

using flight_record::CollectiveState;

Request request(const std::string& name) {
  Request r;
  r.name = name;
  r.type = OpType::kBroadcast;
  r.dtype = DataType::kFloat16;
  r.shape = {2, 3};
  return r;
}

TEST(FlightRecorder, KeepsTheLastCollectivesWithTheirStates) {
  FlightRecorder recorder(3, 1, 2, "host-b", "");  // rounded up to 4 slots
  const auto now = FlightRecorder::Clock::now();
  recorder.new_cycle(now);
  std::uint64_t seq[6];
  for (int i = 0; i < 6; ++i) seq[i] = recorder.submitted(request("t" + std::to_string(i)), now);
  recorder.started(seq[1]);  // overwritten by t5: nothing to note
  recorder.started(seq[3]);
  recorder.finished(seq[3], true);
  recorder.started(seq[4]);
  recorder.finished(seq[4], false);
  recorder.started(seq[5]);

  const flight_record::RankRecord record = recorder.snapshot("asked");
  EXPECT_EQ(record.rank, 1);
  EXPECT_EQ(record.size, 2);
  EXPECT_EQ(record.host, "host-b");
  EXPECT_EQ(record.reason, "asked");
  ASSERT_EQ(record.collectives.size(), 4u);
  EXPECT_EQ(record.collectives[0].name, "t2");
  EXPECT_EQ(record.collectives[0].sequence, 2u);
  EXPECT_EQ(record.collectives[0].state, CollectiveState::kSubmitted);
  EXPECT_EQ(record.collectives[1].state, CollectiveState::kFinished);
  EXPECT_EQ(record.collectives[2].state, CollectiveState::kFailed);
  EXPECT_EQ(record.collectives[3].state, CollectiveState::kStarted);
  const flight_record::CollectiveRecord& last = record.collectives[3];
  EXPECT_EQ(last.operation, "broadcast");
  EXPECT_EQ(last.dtype, "float16");
  EXPECT_EQ(last.device, "cpu");
  EXPECT_EQ(last.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_GT(last.submitted_us, 0);
  EXPECT_GE(last.started_us, last.submitted_us);
  EXPECT_EQ(last.finished_us, 0);
  EXPECT_LE(last.started_us, record.written_us);
}

TEST(FlightRecorder, WritesALineForTheLauncherAndTheWholeRingToItsDirectory) {
  dtrain::testing::TempDir dir;
  FlightRecorder recorder(64, 0, 2, "h", dir.path().string());
  const auto now = FlightRecorder::Clock::now();
  recorder.new_cycle(now);
  for (int i = 0; i < 20; ++i) {
    const std::uint64_t s = recorder.submitted(request("done" + std::to_string(i)), now);
    recorder.started(s);
    recorder.finished(s, true);
  }
  recorder.submitted(request("waiting"), now);

  ::testing::internal::CaptureStderr();
  recorder.write("stalled");
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(err.rfind(flight_record::kLinePrefix, 0), 0u) << err;
  ASSERT_EQ(err.back(), '\n');
  const flight_record::RankRecord line =
      flight_record::parse_rank_record(std::string_view(err).substr(flight_record::kLinePrefix.size()));
  // The collective in flight and the last finished ones, oldest first.
  ASSERT_EQ(line.collectives.size(), 9u);
  EXPECT_EQ(line.collectives.front().name, "done12");
  EXPECT_EQ(line.collectives.back().name, "waiting");
  EXPECT_EQ(line.collectives.back().state, CollectiveState::kSubmitted);
  EXPECT_EQ(line.reason, "stalled");

  std::ifstream file(dir.path() / "rank0.json");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(flight_record::parse_rank_record(text.str()).collectives.size(), 21u);
}

// A backward pass may have hundreds of gradients in flight: the line keeps the oldest (what the
// verdict looks at first) and stays one line of the launcher's relay.
TEST(FlightRecorder, TheLineKeepsTheOldestInFlightWithinOneRelayLine) {
  FlightRecorder recorder(1024, 0, 2, "h", "");
  recorder.new_cycle(FlightRecorder::Clock::now());
  for (int i = 0; i < 300; ++i) {
    recorder.submitted(request("grad." + std::string(200, 'x') + std::to_string(i)), FlightRecorder::Clock::now());
  }
  ::testing::internal::CaptureStderr();
  recorder.write("stalled");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_LE(err.size(), 64u * 1024u);
  const flight_record::RankRecord line =
      flight_record::parse_rank_record(std::string_view(err).substr(flight_record::kLinePrefix.size()));
  ASSERT_FALSE(line.collectives.empty());
  EXPECT_LE(line.collectives.size(), 64u);
  EXPECT_EQ(line.collectives.front().name, "grad." + std::string(200, 'x') + "0");
}

TEST(FlightRecorder, OffRecordsAndWritesNothing) {
  FlightRecorder recorder(0, 0, 1, "h", "");
  EXPECT_FALSE(recorder.enabled());
  EXPECT_EQ(recorder.submitted(request("x"), FlightRecorder::Clock::now()), FlightRecorder::kNotRecorded);
  ::testing::internal::CaptureStderr();
  recorder.write("stalled");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace dtrain::runtime
