#include "job/metric_extractor.h"

#include <gtest/gtest.h>

namespace dtrain::job {
namespace {

TEST(TaggedLine, SplitsHostRankAndText) {
  TaggedLine t = parse_tagged_line("[algo-2:3]<stdout>:step 5 loss: 0.25", "algo-1");
  EXPECT_EQ(t.host, "algo-2");
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.text, "step 5 loss: 0.25");
  TaggedLine plain = parse_tagged_line("dtrain entrypoint: [warning] x", "algo-3");
  EXPECT_EQ(plain.host, "algo-3");
  EXPECT_FALSE(plain.rank);
  EXPECT_EQ(plain.text, "dtrain entrypoint: [warning] x");
  EXPECT_FALSE(parse_tagged_line("[not a tag] text", "h").rank);
}

TEST(MetricExtractor, FirstGroupOfEveryMatchingDefinition) {
  MetricExtractor extractor(
      {{"loss", "loss: ([0-9.eE+-]+)"}, {"accuracy", "acc(?:uracy)?=([0-9.]+)%"}, {"never", "nomatch ([0-9]+)"}});
  auto samples = extractor.extract("epoch 1 loss: 1.5e-2 acc=97.5%\n", "algo-1", 0, 12.5);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].name, "loss");
  EXPECT_DOUBLE_EQ(samples[0].value, 0.015);
  EXPECT_EQ(samples[1].name, "accuracy");
  EXPECT_DOUBLE_EQ(samples[1].value, 97.5);
  auto json = samples[0].to_json();
  EXPECT_EQ(json["host"], "algo-1");
  EXPECT_EQ(json["rank"], 0);
  EXPECT_EQ(json["time"], 12.5);
  EXPECT_TRUE(extractor.extract("loss: not-a-number", "h", std::nullopt, 0).empty());
  EXPECT_TRUE(extractor.extract("loss: 0.5", "h", std::nullopt, 0)[0].to_json()["rank"].is_null());
}

}  // namespace
}  // namespace dtrain::job
