#include "flight_record/flight_record.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace dtrain::flight_record {
namespace {

std::string error_of(const std::string& json) {
  try {
    parse_rank_record(json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(FlightRecord, RoundTripsThroughOneLineOfJson) {
  RankRecord record;
  record.rank = 1;
  record.size = 3;
  record.host = "node-a";
  record.pid = 4242;
  record.reason = "stall";
  record.written_us = 1'700'000'000'000'000;
  CollectiveRecord c;
  c.sequence = 7;
  c.name = "grad.layer1 \"weight\"\n";
  c.operation = "allreduce";
  c.shape = {64, 3, 7, 7};
  c.dtype = "float32";
  c.device = "cpu";
  c.state = CollectiveState::kStarted;
  c.submitted_us = 1'699'999'999'000'000;
  c.started_us = 1'699'999'999'500'000;
  record.collectives = {c};

  const std::string line = to_json(record);
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line, whatever the name holds";
  const RankRecord back = parse_rank_record(line);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.size, 3);
  EXPECT_EQ(back.host, "node-a");
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.reason, "stall");
  EXPECT_EQ(back.written_us, record.written_us);
  ASSERT_EQ(back.collectives.size(), 1u);
  const CollectiveRecord& b = back.collectives[0];
  EXPECT_EQ(b.sequence, 7u);
  EXPECT_EQ(b.name, c.name);
  EXPECT_EQ(b.shape, c.shape);
  EXPECT_EQ(b.state, CollectiveState::kStarted);
  EXPECT_EQ(b.process_set, "global");
  EXPECT_EQ(b.submitted_us, c.submitted_us);
  EXPECT_EQ(b.started_us, c.started_us);
  EXPECT_EQ(b.finished_us, 0);
}

TEST(FlightRecord, DamagedRecordsAreRefusedNamingWhatIsWrong) {
  EXPECT_NE(error_of("{not json").find("not JSON"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"size": 2})").find("has no 'rank'"), std::string::npos);
  const std::string head = R"({"rank": 0, "size": 2, "host": "h", "pid": 1, "reason": "r", "written_us": 5, )";
  EXPECT_NE(error_of(head + R"("collectives": 3})").find("no 'collectives' list"), std::string::npos);
  EXPECT_NE(error_of(head + R"("collectives": [{"seq": 0}]})").find("a collective has no 'name'"), std::string::npos);
  const std::string collective = R"({"seq": 0, "name": "x", "op": "allreduce", "shape": [1], "dtype": "float32",
      "device": "cpu", "process_set": "global", "state": "lost", "submitted_us": 1, "started_us": 0, "finished_us": 0})";
  EXPECT_NE(error_of(head + R"("collectives": [)" + collective + "]}").find("unknown collective state 'lost'"),
            std::string::npos);
  EXPECT_NE(
      error_of(R"({"rank": 2, "size": 2, "host": "h", "pid": 1, "reason": "r", "written_us": 5, "collectives": []})")
          .find("rank 2 is outside a world of 2"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"rank": "zero", "size": 2})").find("'rank' is of the wrong kind"), std::string::npos);
  // A number beyond an integer's range is refused, not cast (found by fuzzing).
  EXPECT_NE(error_of(R"({"rank": 1.8e19, "size": 2})").find("'rank' is of the wrong kind"), std::string::npos);
  EXPECT_NE(error_of(head + R"("collectives": [{"seq": 0, "name": "x", "op": "a", "shape": [1e300]}]})")
                .find("a collective's 'shape' is of the wrong kind"),
            std::string::npos);
}

}  // namespace
}  // namespace dtrain::flight_record
