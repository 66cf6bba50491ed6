// The coordinator, response builder, cache and fusion planner, driven directly with
// messages: the decisions every rank depends on, without any network.
#include <gtest/gtest.h>

#include "runtime/coordinator.h"
#include "runtime/fusion_planner.h"
#include "runtime/message.h"
#include "runtime/response_builder.h"
#include "runtime/response_cache.h"

namespace dtrain::runtime {
namespace {

using Clock = std::chrono::steady_clock;

Request allreduce_request(int rank, const std::string& name, std::vector<std::int64_t> shape = {4},
                          DataType dtype = DataType::kFloat32) {
  Request r;
  r.rank = rank;
  r.type = OpType::kAllreduce;
  r.name = name;
  r.dtype = dtype;
  r.shape = std::move(shape);
  r.reduce_op = ReduceOp::kSum;
  return r;
}

std::vector<CycleReport> reports(int world) { return std::vector<CycleReport>(world); }

std::vector<std::string> planned_names(const CyclePlan& plan, const ResponseCache& cache) {
  std::vector<std::string> names;
  for (const auto& item : plan.items) {
    names.push_back(item.cache_position >= 0 ? cache.response_at(item.cache_position).names[0]
                                             : item.response.names[0]);
  }
  return names;
}

TEST(Messages, ReportAndPlanSurviveEncoding) {
  CycleReport report;
  report.shutdown = true;
  set_bit(report.cache_bits, 3);
  set_bit(report.cache_bits, 130);
  Request r = allreduce_request(1, "w", {2, 3});
  r.splits = {1, 2};
  r.prescale = 0.5;
  r.group = "g";
  r.group_size = 2;
  report.requests.push_back(r);
  const CycleReport decoded = decode_report(encode(report));
  EXPECT_TRUE(decoded.shutdown);
  EXPECT_EQ(set_positions(decoded.cache_bits), (std::vector<std::uint32_t>{3, 130}));
  ASSERT_EQ(decoded.requests.size(), 1u);
  EXPECT_TRUE(decoded.requests[0].same_parameters(r));
  EXPECT_EQ(decoded.requests[0].rank, 1);

  CyclePlan plan;
  plan.shutdown_reason = "why";
  CyclePlan::Item cached;
  cached.cache_position = 7;
  CyclePlan::Item full;
  full.response.names = {"a", "b"};
  full.response.sizes = {1, 2};
  full.response.error = "bad";
  plan.items = {cached, full};
  plan.fusion_threshold_bytes = 16u << 20;
  plan.cycle_time_ms = 2.5;
  const CyclePlan back = decode_plan(encode(plan));
  EXPECT_EQ(back.shutdown_reason, "why");
  EXPECT_EQ(back.fusion_threshold_bytes, 16u << 20);
  EXPECT_EQ(back.cycle_time_ms, 2.5);
  ASSERT_EQ(back.items.size(), 2u);
  EXPECT_EQ(back.items[0].cache_position, 7);
  EXPECT_EQ(back.items[1].response.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(back.items[1].response.error, "bad");
}

TEST(Messages, TruncatedMessageIsAnError) {
  CycleReport report;
  report.requests.push_back(allreduce_request(0, "w"));
  auto bytes = encode(report);
  bytes.resize(bytes.size() - 3);
  EXPECT_THROW(decode_report(bytes), Error);
}

TEST(ResponseBuilder, NamesTheRanksThatDisagreeOnShape) {
  Request a = allreduce_request(0, "grad", {2, 3}), b = allreduce_request(1, "grad", {3, 3}),
          c = allreduce_request(2, "grad", {2, 3});
  const Response r = build_response({&a, &b, &c}, {});
  EXPECT_EQ(r.error, "allreduce 'grad': shape differs across ranks: ranks 0,2 have [2, 3]; rank 1 has [3, 3]");
}

TEST(ResponseBuilder, DtypeOpRootAndOperationMismatches) {
  Request a = allreduce_request(0, "t"), b = allreduce_request(1, "t", {4}, DataType::kFloat64);
  EXPECT_NE(
      build_response({&a, &b}, {}).error.find("dtype differs across ranks: rank 0 has float32; rank 1 has float64"),
      std::string::npos);
  b = allreduce_request(1, "t");
  b.reduce_op = ReduceOp::kMax;
  EXPECT_NE(build_response({&a, &b}, {}).error.find("reduce op differs"), std::string::npos);
  b.reduce_op = ReduceOp::kSum;
  b.type = OpType::kBroadcast;
  EXPECT_NE(build_response({&a, &b}, {})
                .error.find("operation differs across ranks: rank 0 has allreduce; rank 1 has "
                            "broadcast"),
            std::string::npos);
  a.type = OpType::kBroadcast;
  b.root = 1;
  EXPECT_NE(build_response({&a, &b}, {}).error.find("root rank differs"), std::string::npos);
}

TEST(ResponseBuilder, JoinedRanksServeSumAndAverageAllreduceOnly) {
  Request a = allreduce_request(0, "t");
  EXPECT_TRUE(build_response({&a, nullptr}, {1}).ok());
  a.reduce_op = ReduceOp::kMin;
  EXPECT_NE(build_response({&a, nullptr}, {1}).error.find("use Sum or Average"), std::string::npos);
  a.type = OpType::kAllgather;
  EXPECT_NE(build_response({&a, nullptr}, {1}).error.find("cannot run while rank 1 joined"), std::string::npos);
}

TEST(ResponseBuilder, AllgatherAllowsDifferentFirstDimensionsOnly) {
  Request a = allreduce_request(0, "g", {2, 3}), b = allreduce_request(1, "g", {5, 3});
  a.type = b.type = OpType::kAllgather;
  Response r = build_response({&a, &b}, {});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.sizes, (std::vector<std::int64_t>{2, 5}));
  b.shape = {5, 4};
  EXPECT_NE(build_response({&a, &b}, {}).error.find("shape after the first dimension differs"), std::string::npos);
}

TEST(ResponseBuilder, ReducescatterRowsFavourLowRanks) {
  EXPECT_EQ(reducescatter_rows(5, 3, 0), 2);
  EXPECT_EQ(reducescatter_rows(5, 3, 1), 2);
  EXPECT_EQ(reducescatter_rows(5, 3, 2), 1);
  EXPECT_EQ(reducescatter_rows(1, 3, 2), 0);
}

TEST(Coordinator, WaitsForEveryRankAndPlansInArrivalOrder) {
  ResponseCache cache(16);
  Coordinator coordinator(2, cache, StallInspector(0, 0), nullptr);
  auto r = reports(2);
  r[0].requests = {allreduce_request(0, "a"), allreduce_request(0, "b")};
  r[1].requests = {allreduce_request(1, "b")};
  CyclePlan plan = coordinator.plan(r, Clock::now());
  EXPECT_EQ(planned_names(plan, cache), (std::vector<std::string>{"b"}));
  r = reports(2);
  r[1].requests = {allreduce_request(1, "a")};
  plan = coordinator.plan(r, Clock::now());
  EXPECT_EQ(planned_names(plan, cache), (std::vector<std::string>{"a"}));
  EXPECT_EQ(coordinator.pending_count(), 0u);
}

TEST(Coordinator, CacheBitsStandInForRepeatedRequests) {
  ResponseCache cache(16);
  Coordinator coordinator(2, cache, StallInspector(0, 0), nullptr);
  auto r = reports(2);
  r[0].requests = {allreduce_request(0, "w")};
  r[1].requests = {allreduce_request(1, "w")};
  CyclePlan plan = coordinator.plan(r, Clock::now());
  ASSERT_EQ(plan.items.size(), 1u);
  cache.put(plan.items[0].response);  // what every rank does when it runs the plan

  // Next step: both ranks find the request in their cache and send only a bit.
  auto position = cache.find(allreduce_request(1, "w"));
  ASSERT_TRUE(position.has_value());
  r = reports(2);
  set_bit(r[0].cache_bits, *position);
  set_bit(r[1].cache_bits, *position);
  EXPECT_TRUE(r[0].requests.empty());
  plan = coordinator.plan(r, Clock::now());
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].cache_position, static_cast<std::int32_t>(*position));

  // A rank whose shape changed misses the cache and sends the request: the mismatch is an error.
  EXPECT_FALSE(cache.find(allreduce_request(1, "w", {8})).has_value());
  r = reports(2);
  set_bit(r[0].cache_bits, *position);
  r[1].requests = {allreduce_request(1, "w", {8})};
  plan = coordinator.plan(r, Clock::now());
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].response.error, "allreduce 'w': shape differs across ranks: rank 0 has [4]; rank 1 has [8]");
}

TEST(Coordinator, JoinCompletesWhenEveryRankJoinedAndNamesTheLast) {
  ResponseCache cache(16);
  Coordinator coordinator(3, cache, StallInspector(0, 0), nullptr);
  Request join;
  join.type = OpType::kJoin;
  join.name = kJoinName;
  auto r = reports(3);
  join.rank = 1;
  r[1].requests = {join};
  r[0].requests = {allreduce_request(0, "x")};
  EXPECT_TRUE(coordinator.plan(r, Clock::now()).items.empty());  // rank 2 has not sent x
  r = reports(3);
  r[2].requests = {allreduce_request(2, "x")};
  CyclePlan plan = coordinator.plan(r, Clock::now());
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].response.joined_ranks, (std::vector<std::int32_t>{1}));
  r = reports(3);
  join.rank = 2;
  r[2].requests = {join};
  EXPECT_TRUE(coordinator.plan(r, Clock::now()).items.empty());
  r = reports(3);
  join.rank = 0;
  r[0].requests = {join};
  plan = coordinator.plan(r, Clock::now());
  ASSERT_EQ(plan.items.size(), 1u);
  EXPECT_EQ(plan.items[0].response.type, OpType::kJoin);
  EXPECT_EQ(plan.items[0].response.last_joined, 0);
}

TEST(Coordinator, GroupRunsOnlyWhenWholeGroupIsReady) {
  ResponseCache cache(16);
  Coordinator coordinator(1, cache, StallInspector(0, 0), nullptr);
  Request a = allreduce_request(0, "g.a"), b = allreduce_request(0, "g.b");
  a.group = b.group = "g.a";
  a.group_size = b.group_size = 2;
  auto r = reports(1);
  r[0].requests = {a};
  EXPECT_TRUE(coordinator.plan(r, Clock::now()).items.empty());
  r[0].requests = {b};
  EXPECT_EQ(coordinator.plan(r, Clock::now()).items.size(), 2u);
}

TEST(Coordinator, StallPastShutdownTimeStopsTheJobNamingTheMissingRank) {
  ResponseCache cache(16);
  Coordinator coordinator(2, cache, StallInspector(1, 5), nullptr);
  const auto t0 = Clock::now();
  auto r = reports(2);
  r[0].requests = {allreduce_request(0, "lonely")};
  EXPECT_FALSE(coordinator.plan(r, t0).shutdown);
  const CyclePlan plan = coordinator.plan(reports(2), t0 + std::chrono::seconds(6));
  EXPECT_TRUE(plan.shutdown);
  EXPECT_NE(plan.shutdown_reason.find("allreduce 'lonely' waiting 6 s: submitted by ranks [0], missing on ranks [1]"),
            std::string::npos)
      << plan.shutdown_reason;
}

TEST(StallInspector, WarnsAfterTheWarningTimeOnly) {
  StallInspector inspector(2, 0);
  const auto t0 = Clock::now();
  std::vector<StallInspector::Pending> pending = {{"x", "broadcast", {0}, {1, 2}, t0}};
  EXPECT_FALSE(inspector.due(t0, t0 + std::chrono::seconds(1)));
  EXPECT_TRUE(inspector.due(t0, t0 + std::chrono::seconds(3)));
  EXPECT_FALSE(StallInspector(0, 0).due(t0, t0 + std::chrono::hours(1)));  // both off
  EXPECT_EQ(inspector.check(pending, t0 + std::chrono::seconds(1)), "");
  EXPECT_EQ(inspector.last_warning(), "");
  EXPECT_EQ(inspector.check(pending, t0 + std::chrono::seconds(3)), "");
  EXPECT_NE(inspector.last_warning().find("broadcast 'x' waiting 3 s: submitted by ranks [0], missing on ranks [1, 2]"),
            std::string::npos);
}

TEST(ResponseCache, EvictsLeastRecentlyUsedAndReplacesByName) {
  ResponseCache cache(2);
  auto response = [](const std::string& name, std::int64_t n) {
    Request a = allreduce_request(0, name, {n});
    return build_response({&a}, {});
  };
  cache.put(response("a", 1));
  cache.put(response("b", 1));
  cache.touch(*cache.find(allreduce_request(0, "a", {1})));
  cache.put(response("c", 1));  // evicts b, the least recently used
  EXPECT_TRUE(cache.find(allreduce_request(0, "a", {1})).has_value());
  EXPECT_FALSE(cache.find(allreduce_request(0, "b", {1})).has_value());
  EXPECT_TRUE(cache.find(allreduce_request(0, "c", {1})).has_value());
  cache.put(response("a", 5));  // same name, new shape: replaces in place
  EXPECT_FALSE(cache.find(allreduce_request(0, "a", {1})).has_value());
  EXPECT_TRUE(cache.find(allreduce_request(0, "a", {5})).has_value());
  EXPECT_EQ(cache.size(), 2u);
}

TEST(ResponseCache, RebuildsEachRanksRequestForAllgatherAndAlltoall) {
  Request a = allreduce_request(0, "t", {2, 3}), b = allreduce_request(1, "t", {4, 3});
  a.type = b.type = OpType::kAlltoall;
  a.splits = {1, 1};
  b.splits = {3, 1};
  const Response r = build_response({&a, &b}, {});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(request_for_rank(r, 0).same_parameters(a));
  EXPECT_TRUE(request_for_rank(r, 1).same_parameters(b));
}

TEST(FusionPlanner, PacksCompatibleAllreducesUpToTheThreshold) {
  auto response = [](const std::string& name, std::int64_t elements, DataType dtype = DataType::kFloat32) {
    Request a = allreduce_request(0, name, {elements}, dtype);
    return build_response({&a}, {});
  };
  // 4-byte floats: threshold 40 bytes holds 10 elements.
  std::vector<Response> in = {response("a", 4), response("b", 4), response("big", 20), response("c", 2),
                              response("d", 4, DataType::kFloat64)};
  const auto fused = fuse_responses(in, 40);
  ASSERT_EQ(fused.size(), 3u);
  EXPECT_EQ(fused[0].names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(fused[0].sizes, (std::vector<std::int64_t>{4, 4, 2}));
  EXPECT_EQ(fused[1].names, (std::vector<std::string>{"big"}));
  EXPECT_EQ(fused[2].names, (std::vector<std::string>{"d"}));
  EXPECT_EQ(fuse_responses(in, 0).size(), 5u);  // threshold 0 disables fusion
}

TEST(FusionPlanner, NeverSplitsAGroup) {
  std::vector<Response> in;
  for (const char* name : {"g0", "g1", "g2"}) {
    Request a = allreduce_request(0, name, {10});
    a.group = "g0";
    a.group_size = 3;
    in.push_back(build_response({&a}, {}));
  }
  const auto fused = fuse_responses(in, 8);  // smaller than any member
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(fused[0].names.size(), 3u);
}

}  // namespace
}  // namespace dtrain::runtime
