// Process sets across real processes: ctest launches this binary through `dtrain run` with 3
// and 4 ranks over every engine. Every rank runs the same tests in the same order; sets are
// added and removed by every rank (Horovod's rule) unless a test says otherwise. Expected
// values are computed from the rule each rank used to fill its input.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>

#include "dtrain/dtrain.h"
#include "tests/runtime/tensor_values.h"
#include "tests/support/error_of.h"

namespace dtrain {
namespace {

using testing::error_of;
using testing::Tensor;

std::vector<int> ranks_where(const std::function<bool(int)>& keep) {
  std::vector<int> ranks;
  for (int r = 0; r < size(); ++r) {
    if (keep(r)) ranks.push_back(r);
  }
  return ranks;
}

// What rank r puts at element i: exact in every dtype used here.
double value_of(int r, std::size_t i) { return 1 + 10.0 * r + static_cast<double>(i); }

double sum_over(const std::vector<int>& ranks, std::size_t i) {
  double sum = 0;
  for (int r : ranks) sum += value_of(r, i);
  return sum;
}

Tensor filled(DataType dtype, std::vector<std::int64_t> shape) {
  Tensor t(dtype, std::move(shape));
  for (std::size_t i = 0; i < t.size(); ++i) t.set(i, value_of(rank(), i));
  return t;
}

void expect_sum(const Tensor& t, const std::vector<int>& ranks, const std::string& what) {
  for (std::size_t i = 0; i < t.size(); ++i) ASSERT_EQ(t.get(i), sum_over(ranks, i)) << what << " element " << i;
}

TEST(ProcessSets, TheGlobalSetIsEveryRankAndTheDefault) {
  const ProcessSet global;
  EXPECT_TRUE(global.is_global());
  EXPECT_TRUE(global.included());
  EXPECT_EQ(global.rank(), rank());
  EXPECT_EQ(global.size(), size());
  EXPECT_EQ(global.ranks(), ranks_where([](int) { return true; }));
  Tensor by_default = filled(DataType::kFloat32, {6}), named = filled(DataType::kFloat32, {6});
  allreduce("global.default", by_default.view, by_default.view, {ReduceOp::kSum});
  allreduce("global.named", named.view, named.view, {ReduceOp::kSum}, global);
  expect_sum(by_default, global.ranks(), "default");
  expect_sum(named, global.ranks(), "global set");
  EXPECT_NE(error_of([&] { remove_process_set(global); }).find("the global process set cannot be removed"),
            std::string::npos);
}

// Even and odd ranks reduce tensors of different shapes under the same name, while the whole
// job reduces a third under that name too; each reduces over its own members, step after step
// (the second step on comes from each set's own response cache).
TEST(ProcessSets, DisjointSetsReduceDifferentTensorsAtTheSameTime) {
  const ProcessSet evens = add_process_set(ranks_where([](int r) { return r % 2 == 0; }));
  const ProcessSet odds = add_process_set(ranks_where([](int r) { return r % 2 == 1; }));
  const ProcessSet& mine = rank() % 2 == 0 ? evens : odds;
  ASSERT_TRUE(mine.included());
  EXPECT_FALSE((rank() % 2 == 0 ? odds : evens).included());
  EXPECT_EQ(mine.rank(), rank() / 2);
  for (int step = 0; step < 20; ++step) {
    Tensor in_set = filled(DataType::kFloat64, {rank() % 2 == 0 ? 5 : 7});
    Tensor in_job = filled(DataType::kInt32, {3});
    Handle set_op = allreduce_async("step", in_set.view, in_set.view, {ReduceOp::kSum}, mine);
    Handle job_op = allreduce_async("step", in_job.view, in_job.view, {ReduceOp::kSum});
    set_op.wait();
    job_op.wait();
    expect_sum(in_set, mine.ranks(), "set, step " + std::to_string(step));
    expect_sum(in_job, ProcessSet().ranks(), "job, step " + std::to_string(step));
  }
  remove_process_set(evens);
  remove_process_set(odds);
}

// Rank 1 is in {0,1} and {1,2}. Its operation on {1,2} waits for rank 2, which submits only
// after a barrier of the whole job that ranks 0 and 1 reach once their operation on {0,1} has
// finished. Were the sets' negotiations one, {0,1}'s operation would queue behind {1,2}'s and
// the barrier never come (the stall shutdown would fail the test).
TEST(ProcessSets, AnOperationOnOneSetDoesNotWaitForAnother) {
  const ProcessSet first = add_process_set({0, 1});
  const ProcessSet second = add_process_set({1, 2});
  Tensor a = filled(DataType::kFloat32, {4}), b = filled(DataType::kFloat32, {4});
  if (rank() == 1) {
    Handle later = allreduce_async("later", b.view, b.view, {ReduceOp::kSum}, second);
    allreduce("now", a.view, a.view, {ReduceOp::kSum}, first);
    barrier();
    later.wait();
  } else if (rank() == 0) {
    allreduce("now", a.view, a.view, {ReduceOp::kSum}, first);
    barrier();
  } else if (rank() == 2) {
    barrier();
    allreduce("later", b.view, b.view, {ReduceOp::kSum}, second);
  } else {
    barrier();
  }
  if (first.included()) expect_sum(a, {0, 1}, "first set");
  if (second.included()) expect_sum(b, {1, 2}, "second set");
  remove_process_set(first);
  remove_process_set(second);
}

TEST(ProcessSets, NestedSetsEachReduceOverTheirOwnMembers) {
  const ProcessSet outer = add_process_set(ranks_where([](int r) { return r < size() - 1; }));
  const ProcessSet inner = add_process_set(ranks_where([](int r) { return r < size() - 2; }));
  std::vector<std::pair<ProcessSet, std::unique_ptr<Tensor>>> mine;
  for (const ProcessSet& set : {ProcessSet(), outer, inner}) {
    if (set.included()) mine.emplace_back(set, std::make_unique<Tensor>(filled(DataType::kFloat64, {3, 2})));
  }
  std::vector<Handle> handles;
  for (auto& [set, t] : mine) handles.push_back(allreduce_async("nested", t->view, t->view, {ReduceOp::kSum}, set));
  for (Handle& h : handles) h.wait();
  for (auto& [set, t] : mine) expect_sum(*t, set.ranks(), set.describe());
  remove_process_set(outer);
  remove_process_set(inner);
}

// Every rank but 0: the set's ranks (1, 2, ...) differ from the job's, so rows, splits and
// roots show which numbering each operation uses.
TEST(ProcessSets, EveryCollectiveOverASet) {
  const ProcessSet set = add_process_set(ranks_where([](int r) { return r > 0; }));
  EXPECT_EQ(set.included(), rank() > 0);
  EXPECT_EQ(set.rank(), rank() - 1);
  EXPECT_EQ(set.size(), size() - 1);
  if (set.included()) {
    const int n = set.size(), me = set.rank();

    // allgather: one row more per member, in the members' order.
    Tensor rows(DataType::kInt64, {me + 1, 2});
    for (std::size_t i = 0; i < rows.size(); ++i) rows.set(i, rank());
    const CollectiveResult gathered = allgather("set.allgather", rows.view, {}, set);
    std::vector<std::int64_t> expected_splits(n);
    std::iota(expected_splits.begin(), expected_splits.end(), 1);
    EXPECT_EQ(gathered.received_splits(), expected_splits);
    std::size_t row = 0;
    for (int m = 0; m < n; ++m) {
      for (int k = 0; k <= m; ++k, ++row)
        EXPECT_EQ(testing::load(DataType::kInt64, gathered.output().data, row * 2), m + 1);
    }

    // broadcast: the root is a job rank.
    const int root = size() - 1;
    Tensor sent(DataType::kFloat32, {3});
    for (std::size_t i = 0; i < 3; ++i) sent.set(i, rank() == root ? 7.0 + i : -1);
    broadcast("set.broadcast", sent.view, root, set);
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(sent.get(i), 7.0 + i);

    // alltoall: one split per member.
    Tensor out(DataType::kFloat32, {2 * n});
    for (std::size_t i = 0; i < out.size(); ++i) out.set(i, 100.0 * rank() + i);
    const CollectiveResult exchanged = alltoall("set.alltoall", out.view, {}, {}, set);
    EXPECT_EQ(exchanged.received_splits(), std::vector<std::int64_t>(n, 2));
    for (int m = 0; m < n; ++m) {
      for (int k = 0; k < 2; ++k) {
        EXPECT_EQ(testing::load(DataType::kFloat32, exchanged.output().data, 2 * m + k), 100.0 * (m + 1) + 2 * me + k);
      }
    }

    // reducescatter: first dimension 2n + 1 shared out over the members.
    Tensor scattered = filled(DataType::kFloat64, {2 * n + 1});
    const CollectiveResult share = reducescatter("set.reducescatter", scattered.view, {ReduceOp::kSum}, {}, set);
    const std::int64_t first_row = 2 * me + std::min(me, 1);
    ASSERT_EQ(share.output().shape, (std::vector<std::int64_t>{me == 0 ? 3 : 2}));
    for (std::int64_t k = 0; k < share.output().shape[0]; ++k) {
      EXPECT_EQ(testing::load(DataType::kFloat64, share.output().data, k),
                sum_over(set.ranks(), static_cast<std::size_t>(first_row + k)));
    }

    // A grouped allreduce, Average over the set's size, a barrier, and bytes.
    Tensor g1 = filled(DataType::kFloat64, {2}), g2 = filled(DataType::kFloat64, {5});
    grouped_allreduce({"set.group.a", "set.group.b"}, {g1.view, g2.view}, {g1.view, g2.view}, {ReduceOp::kAverage},
                      set);
    for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(g2.get(i), sum_over(set.ranks(), i) / n);
    barrier(set);
    EXPECT_EQ(broadcast_object(rank() == 1 ? "from one" : "", 1, "set.object", set), "from one");
    const std::vector<std::string> everyone = allgather_object(std::to_string(rank()), "set.objects", set);
    ASSERT_EQ(static_cast<int>(everyone.size()), n);
    for (int m = 0; m < n; ++m) EXPECT_EQ(everyone[m], std::to_string(m + 1));
  }
  remove_process_set(set);
}

TEST(ProcessSets, MisuseIsAnErrorOnTheRankThatMadeIt) {
  const ProcessSet pair = add_process_set({0, 1});
  const ProcessSet later_pair = add_process_set({1, 2});
  Tensor t = filled(DataType::kFloat32, {2});
  if (!pair.included()) {
    const std::string message = error_of([&] { allreduce("misuse.outside", t.view, t.view, {}, pair); });
    EXPECT_NE(message.find("rank " + std::to_string(rank()) + " is not in " + pair.describe()), std::string::npos)
        << message;
  } else {
    const std::string message = error_of([&] { broadcast("misuse.root", t.view, 2, pair); });
    EXPECT_NE(message.find("root rank 2 is not in process set " + pair.name() + " (ranks 0,1)"), std::string::npos)
        << message;
  }
  // Members that disagree hear of it together, by their job ranks.
  if (later_pair.included()) {
    Tensor shaped(DataType::kFloat32, {rank()});
    const std::string message = error_of([&] { allreduce("misuse.shape", shaped.view, shaped.view, {}, later_pair); });
    EXPECT_NE(message.find("rank 1 has [1]; rank 2 has [2]"), std::string::npos) << message;
  }
  remove_process_set(pair);
  const std::string removed = error_of([&] { allreduce("misuse.removed", t.view, t.view, {}, pair); });
  EXPECT_NE(removed.find(pair.describe() + " was removed"), std::string::npos) << removed;
  EXPECT_NE(error_of([&] { remove_process_set(pair); }).find("was removed"), std::string::npos);
  remove_process_set(later_pair);
}

TEST(ProcessSets, AddingIsCheckedAndFailsOnEveryRankAlike) {
  const std::vector<int> differing = rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{0, 2};
  std::string message = error_of([&] { add_process_set(differing); });
  EXPECT_NE(message.find("the ranks differ across ranks: rank 0 passes [0,1]; ranks 1,"), std::string::npos) << message;
  EXPECT_NE(error_of([] { add_process_set({}); }).find("needs at least one rank"), std::string::npos);
  message = error_of([] { add_process_set({0, size()}); });
  EXPECT_NE(message.find("rank " + std::to_string(size()) + " is outside 0.." + std::to_string(size() - 1)),
            std::string::npos)
      << message;
  EXPECT_NE(error_of([] { add_process_set({1, 1}); }).find("rank 1 is listed twice"), std::string::npos);
  const ProcessSet set = add_process_set(rank() == 0 ? std::vector<int>{1, 0} : std::vector<int>{0, 1});  // any order
  EXPECT_EQ(set.ranks(), (std::vector<int>{0, 1}));
  message = error_of([] { add_process_set({0, 1}); });
  EXPECT_NE(message.find(set.describe() + " has these ranks already"), std::string::npos) << message;
  remove_process_set(set);
  const ProcessSet again = add_process_set({0, 1});  // the ranks are free again once removed
  EXPECT_NE(again.name(), set.name());
  remove_process_set(again);
}

// PyTorch's new_group: ranks 0 and 1 make a set that the others never hear of.
TEST(ProcessSets, ASetOnlyItsMembersCreate) {
  if (rank() < 2) {
    const ProcessSet pair = connect_process_set("pair", {1, 0});
    EXPECT_EQ(pair.name(), "pair");
    Tensor t = filled(DataType::kFloat32, {3});
    allreduce("members.only", t.view, t.view, {ReduceOp::kSum}, pair);
    expect_sum(t, {0, 1}, "members only");
    remove_process_set(pair);
    // The same key again, once removed: it meets afresh, not at the removed set's addresses.
    const ProcessSet again = connect_process_set("pair", {0, 1});
    Tensor u = filled(DataType::kFloat32, {3});
    allreduce("members.again", u.view, u.view, {ReduceOp::kSum}, again);
    expect_sum(u, {0, 1}, "the key again");
    // add_process_set over the same ranks meanwhile: the pair is its members' own, so every
    // rank, member or not, adds the new set alike.
    const ProcessSet everyones = add_process_set({0, 1});
    allreduce("members.everyones", u.view, u.view, {ReduceOp::kSum}, everyones);
    remove_process_set(everyones);
    remove_process_set(again);
  } else {
    remove_process_set(add_process_set({1, 0}));
    const std::string message = error_of([] { connect_process_set("pair", {0, 1}); });
    EXPECT_NE(message.find("only a set's members call connect_process_set"), std::string::npos) << message;
  }
  EXPECT_NE(error_of([] { connect_process_set("7", {rank()}); }).find("not a number"), std::string::npos);
  barrier();
}

TEST(ProcessSets, SetsEndWithShutdownAndNumberingStartsAgain) {
  const ProcessSet before = add_process_set({0, 1});
  shutdown();
  init();
  Tensor t = filled(DataType::kFloat32, {2});
  if (before.included()) {
    const std::string message = error_of([&] { allreduce("after.shutdown", t.view, t.view, {}, before); });
    EXPECT_NE(message.find("ended with dtrain::shutdown()"), std::string::npos) << message;
  }
  const ProcessSet after = add_process_set({0, 1});
  EXPECT_EQ(after.name(), "1");
  remove_process_set(after);
}

}  // namespace
}  // namespace dtrain
