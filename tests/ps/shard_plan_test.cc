#include "ps/shard_plan.h"

#include <gtest/gtest.h>

#include <map>

#include "ps/ps_error.h"

namespace dtrain::ps {
namespace {

// Every element of every parameter is in exactly one piece.
void expect_covers(const ShardPlan& plan, const std::vector<ParameterSize>& parameters) {
  for (size_t p = 0; p < parameters.size(); ++p) {
    std::int64_t next = 0;
    for (int index : plan.pieces_of_parameter(static_cast<int>(p))) {
      const Piece& piece = plan.pieces()[static_cast<size_t>(index)];
      EXPECT_EQ(piece.parameter, static_cast<int>(p));
      EXPECT_EQ(piece.offset, next) << piece.name;
      EXPECT_GT(piece.elements, 0);
      next += piece.elements;
    }
    EXPECT_EQ(next, parameters[p].elements) << parameters[p].name;
  }
}

TEST(ShardPlan, OneServerHoldsEveryParameterWhole) {
  const std::vector<ParameterSize> parameters = {{"a", 10}, {"b", 1000}, {"c", 3}};
  ShardPlan plan(parameters, 1);
  ASSERT_EQ(plan.pieces().size(), 3u);
  for (const auto& piece : plan.pieces()) EXPECT_EQ(piece.server, 0);
  EXPECT_EQ(plan.pieces()[1].name, "b#0");
  expect_covers(plan, parameters);
}

TEST(ShardPlan, LargeTensorsAreSplitSoServersGetNearEqualShares) {
  // A box head: one huge fc6 weight dominates; without splitting one server would get 92%.
  const std::vector<ParameterSize> parameters = {
      {"fc6.weight", 12544 * 1024}, {"fc6.bias", 1024}, {"fc7.weight", 1024 * 1024}, {"fc7.bias", 1024}};
  std::int64_t total = 0;
  for (const auto& p : parameters) total += p.elements;
  for (int servers : {2, 3, 4}) {
    ShardPlan plan(parameters, servers);
    expect_covers(plan, parameters);
    std::int64_t largest_piece = 0;
    for (const auto& piece : plan.pieces()) largest_piece = std::max(largest_piece, piece.elements);
    EXPECT_LE(largest_piece, (total + servers - 1) / servers);
    for (int s = 0; s < servers; ++s) {
      // Within one piece of an even share.
      EXPECT_LE(std::abs(plan.elements_on_server(s) - total / servers), largest_piece) << servers << " servers";
      EXPECT_GT(plan.elements_on_server(s), 0);
    }
  }
}

TEST(ShardPlan, IsTheSameOnEveryWorker) {
  const std::vector<ParameterSize> parameters = {{"w1", 300}, {"b1", 30}, {"w2", 300}, {"b2", 3}, {"w3", 77}};
  ShardPlan a(parameters, 3), b(parameters, 3);
  ASSERT_EQ(a.pieces().size(), b.pieces().size());
  for (size_t i = 0; i < a.pieces().size(); ++i) {
    EXPECT_EQ(a.pieces()[i].name, b.pieces()[i].name);
    EXPECT_EQ(a.pieces()[i].server, b.pieces()[i].server);
  }
  // Piece names are unique (each server keys its pieces by name).
  std::map<std::string, int> names;
  for (const auto& piece : a.pieces()) EXPECT_EQ(names[piece.name]++, 0) << piece.name;
}

TEST(ShardPlan, RefusesNoServersAndEmptyParameters) {
  EXPECT_THROW(ShardPlan({{"a", 1}}, 0), PsError);
  try {
    ShardPlan({{"a", 1}, {"empty", 0}}, 1);
    FAIL();
  } catch (const PsError& e) {
    EXPECT_NE(std::string(e.what()).find("'empty'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::ps
