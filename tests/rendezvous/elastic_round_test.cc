#include "rendezvous/elastic_round.h"

#include <gtest/gtest.h>

#include "dtrain/error.h"

namespace dtrain::rendezvous {
namespace {

TEST(ElasticRound, EncodesAndDecodesMembersInRankOrder) {
  ElasticRound round;
  round.number = 4;
  round.members = {{7, "node-b"}, {2, "node-a"}};
  const ElasticRound back = decode_round(4, encode_round(round));
  ASSERT_EQ(back.size(), 2);
  EXPECT_EQ(back.members[0].worker, 7);
  EXPECT_EQ(back.members[1].host, "node-a");
  EXPECT_EQ(back.rank_of(2), 1);
  EXPECT_FALSE(back.rank_of(3));
}

TEST(ElasticRound, ClosedRoundCarriesItsReason) {
  ElasticRound closed;
  closed.number = 2;
  closed.closed_reason = "the job is finishing";
  EXPECT_EQ(decode_round(2, encode_round(closed)).closed_reason, "the job is finishing");
}

TEST(ElasticRound, MalformedTextIsAnErrorNamingTheRound) {
  for (const char* text : {"", "round 3 size 2\n1 a\n", "round 2 size 2\n1 a\n", "round 3 size 2\n1 a\n1 b\n"}) {
    try {
      decode_round(3, text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("elastic round 3"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace dtrain::rendezvous
