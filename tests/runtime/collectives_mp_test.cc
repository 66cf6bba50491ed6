// Behaviour of every collective across real processes. ctest launches this binary through
// `dtrain run -np 2` and `-np 3`; every rank runs the same tests in the same order, as
// Horovod's own suite does under horovodrun. Expected values are computed locally from the
// rule each rank used to fill its input.
#include <gtest/gtest.h>

#include <climits>
#include <csignal>
#include <cstdlib>

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <thread>

#include "dtrain/dtrain.h"
#include "tests/runtime/expected_values.h"
#include "tests/support/error_of.h"
#include "tests/runtime/tensor_values.h"

namespace dtrain {
namespace {

using testing::all_dtypes;
using testing::contribution;
using testing::error_of;
using testing::expected_reduction;
using testing::Tensor;

TEST(Allreduce, EveryOpEveryDtypeOneToThreeDimensions) {
  const std::vector<std::vector<std::int64_t>> shapes = {{7}, {3, 5}, {2, 3, 4}};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  struct Case {
    Tensor in, out;
    DataType dtype;
    ReduceOp op;
    Handle handle;
  };
  std::vector<std::unique_ptr<Case>> cases;
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : ops) {
      for (const auto& shape : shapes) {
        auto c = std::make_unique<Case>(Case{Tensor(dtype, shape), Tensor(dtype, shape), dtype, op, {}});
        for (std::size_t i = 0; i < c->in.size(); ++i) c->in.set(i, contribution(rank(), i, op));
        const std::string name =
            std::string("ar.") + to_string(dtype) + "." + to_string(op) + "." + std::to_string(shape.size());
        c->handle = allreduce_async(name, c->in.view, c->out.view, {op});
        cases.push_back(std::move(c));
      }
    }
  }
  for (auto& c : cases) c->handle.wait();  // all of them, before any assertion can return
  for (auto& c : cases) {
    for (std::size_t i = 0; i < c->out.size(); ++i) {
      ASSERT_EQ(c->out.get(i), expected_reduction(c->op, size(), i, c->dtype))
          << to_string(c->dtype) << " " << to_string(c->op) << " element " << i;
    }
  }
}

TEST(Allreduce, InPlace) {
  Tensor t(DataType::kFloat32, {5});
  for (std::size_t i = 0; i < 5; ++i) t.set(i, contribution(rank(), i));
  allreduce("inplace", t.view, t.view, {ReduceOp::kSum});
  for (std::size_t i = 0; i < 5; ++i)
    EXPECT_EQ(t.get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32));
}

TEST(Allreduce, PrescaleAndPostscale) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    Tensor in(dtype, {6}), sum(dtype, {6}), avg(dtype, {6});
    for (std::size_t i = 0; i < 6; ++i) in.set(i, contribution(rank(), i));
    allreduce(std::string("scaled.sum.") + to_string(dtype), in.view, sum.view, {ReduceOp::kSum, 0.5, 4.0});
    allreduce(std::string("scaled.avg.") + to_string(dtype), in.view, avg.view, {ReduceOp::kAverage, 2.0, 0.5});
    for (std::size_t i = 0; i < 6; ++i) {
      const double total = expected_reduction(ReduceOp::kSum, size(), i, dtype);
      EXPECT_EQ(sum.get(i), total * 0.5 * 4.0) << to_string(dtype);
      EXPECT_EQ(avg.get(i), total * 2.0 / size() * 0.5) << to_string(dtype);
    }
  }
}

TEST(Allreduce, ManyAsyncSubmittedTogetherAreFusedAndEachCorrect) {
  // 300 tensors of assorted sizes and two dtypes, all in flight at once.
  std::vector<Tensor> tensors;
  std::vector<Handle> handles;
  tensors.reserve(300);
  for (int k = 0; k < 300; ++k) {
    const DataType dtype = k % 2 ? DataType::kFloat32 : DataType::kFloat64;
    tensors.emplace_back(dtype, std::vector<std::int64_t>{1 + (k * 37) % 1000});
    Tensor& t = tensors.back();
    for (std::size_t i = 0; i < t.size(); ++i) t.set(i, contribution(rank(), i + k));
  }
  for (int k = 0; k < 300; ++k) {
    handles.push_back(
        allreduce_async("fused." + std::to_string(k), tensors[k].view, tensors[k].view, {ReduceOp::kSum}));
  }
  for (auto& h : handles) h.wait();  // all of them, before any assertion can return
  for (int k = 0; k < 300; ++k) {
    for (std::size_t i = 0; i < tensors[k].size(); ++i) {
      ASSERT_EQ(tensors[k].get(i), expected_reduction(ReduceOp::kSum, size(), i + k, tensors[k].view.dtype));
    }
  }
}

TEST(Allreduce, RepeatedStepsOfManyTensorsStayCorrect) {
  // A training loop's shape: the same 40 gradients every step. Under DTRAIN_AUTOTUNE (the job
  // test runs it so) the fusion threshold and cycle time change between steps.
  std::vector<Tensor> tensors;
  for (int k = 0; k < 40; ++k)
    tensors.emplace_back(DataType::kFloat32, std::vector<std::int64_t>{1 + (k * 997) % 20000});
  for (int step = 0; step < 60; ++step) {
    std::vector<Handle> handles;
    for (int k = 0; k < 40; ++k) {
      Tensor& t = tensors[k];
      for (std::size_t i = 0; i < t.size(); ++i) t.set(i, contribution(rank(), i + k + step));
      handles.push_back(allreduce_async("step.grad." + std::to_string(k), t.view, t.view, {ReduceOp::kSum}));
    }
    for (auto& h : handles) h.wait();
    for (int k = 0; k < 40; ++k) {
      for (std::size_t i = 0; i < tensors[k].size(); ++i) {
        ASSERT_EQ(tensors[k].get(i), expected_reduction(ReduceOp::kSum, size(), i + k + step, DataType::kFloat32))
            << "step " << step << " tensor " << k;
      }
    }
  }
}

TEST(Allreduce, TensorLargerThanTheFusionThresholdAmongSmallOnes) {
  // ctest runs this binary with --fusion-threshold-mb 1; this tensor is 3 MiB.
  Tensor big(DataType::kFloat32, {3 * 256 * 1024});
  for (std::size_t i = 0; i < big.size(); ++i) big.set(i, contribution(rank(), i));
  std::vector<Tensor> small;
  for (int k = 0; k < 4; ++k) small.emplace_back(DataType::kFloat32, std::vector<std::int64_t>{100});
  std::vector<Handle> handles;
  handles.push_back(allreduce_async("big", big.view, big.view, {ReduceOp::kSum}));
  for (int k = 0; k < 4; ++k) {
    for (std::size_t i = 0; i < 100; ++i) small[k].set(i, contribution(rank(), i));
    handles.push_back(allreduce_async("small." + std::to_string(k), small[k].view, small[k].view, {ReduceOp::kMax}));
  }
  for (auto& h : handles) h.wait();
  for (std::size_t i = 0; i < big.size(); i += 997) {
    ASSERT_EQ(big.get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32));
  }
  EXPECT_EQ(small[3].get(0), expected_reduction(ReduceOp::kMax, size(), 0, DataType::kFloat32));
}

TEST(Allreduce, RanksSubmittingInDifferentOrders) {
  const int n = 24;
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::rotate(order.begin(), order.begin() + (rank() * 7) % n, order.end());
  if (rank() % 2) std::reverse(order.begin(), order.end());
  std::vector<Tensor> tensors;
  for (int k = 0; k < n; ++k) tensors.emplace_back(DataType::kInt32, std::vector<std::int64_t>{k + 1});
  std::vector<Handle> handles(n);
  for (int k : order) {
    for (std::size_t i = 0; i < tensors[k].size(); ++i) tensors[k].set(i, contribution(rank(), i));
    handles[k] = allreduce_async("order." + std::to_string(k), tensors[k].view, tensors[k].view, {ReduceOp::kSum});
    if (k % 5 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (auto& h : handles) h.wait();  // all of them, before any assertion can return
  for (int k = 0; k < n; ++k) {
    for (std::size_t i = 0; i < tensors[k].size(); ++i) {
      ASSERT_EQ(tensors[k].get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kInt32));
    }
  }
}

TEST(Allreduce, SteadyStateRepeatsAndShapeChanges) {
  // The same names every step use the response cache; a new shape must still be honoured.
  for (int step = 0; step < 6; ++step) {
    const std::int64_t n = step < 4 ? 10 : 20;
    Tensor a(DataType::kFloat32, {n}), b(DataType::kFloat64, {n});
    for (std::size_t i = 0; i < a.size(); ++i) {
      a.set(i, contribution(rank(), i) * (step + 1));
      b.set(i, contribution(rank(), i));
    }
    auto ha = allreduce_async("steady.a", a.view, a.view, {ReduceOp::kSum});
    auto hb = allreduce_async("steady.b", b.view, b.view, {ReduceOp::kMin});
    ha.wait();
    hb.wait();
    for (std::size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(a.get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32) * (step + 1));
      ASSERT_EQ(b.get(i), expected_reduction(ReduceOp::kMin, size(), i, DataType::kFloat64));
    }
  }
}

TEST(Allreduce, GroupedAllreduceCompletesAsOne) {
  std::vector<Tensor> tensors;
  std::vector<std::string> names;
  std::vector<TensorView> views;
  for (int k = 0; k < 5; ++k) {
    tensors.emplace_back(DataType::kFloat32, std::vector<std::int64_t>{k + 3});
    names.push_back("group.member." + std::to_string(k));
  }
  for (auto& t : tensors) {
    for (std::size_t i = 0; i < t.size(); ++i) t.set(i, contribution(rank(), i));
    views.push_back(t.view);
  }
  grouped_allreduce(names, views, views, {ReduceOp::kAverage});
  for (auto& t : tensors) {
    for (std::size_t i = 0; i < t.size(); ++i) {
      EXPECT_EQ(t.get(i), expected_reduction(ReduceOp::kAverage, size(), i, DataType::kFloat32));
    }
  }
}

TEST(Mismatch, ShapeDtypeOpAndRootFailOnEveryRankNamingThem) {
  Tensor a(DataType::kFloat32, {rank() == 1 ? 3 : 2}), b(DataType::kFloat32, {2});
  std::string message = error_of([&] { allreduce("mismatch.shape", a.view, a.view); });
  EXPECT_NE(message.find("allreduce 'mismatch.shape': shape differs across ranks"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 has [3]"), std::string::npos) << message;

  Tensor typed(rank() == 0 ? DataType::kFloat64 : DataType::kFloat32, {2});
  message = error_of([&] { allreduce("mismatch.dtype", typed.view, typed.view); });
  EXPECT_NE(message.find("dtype differs across ranks: rank 0 has float64"), std::string::npos) << message;

  message =
      error_of([&] { allreduce("mismatch.op", b.view, b.view, {rank() == 0 ? ReduceOp::kMax : ReduceOp::kSum}); });
  EXPECT_NE(message.find("reduce op differs across ranks: rank 0 has Max"), std::string::npos) << message;

  message = error_of([&] { broadcast("mismatch.root", b.view, rank() == 0 ? 0 : 1); });
  EXPECT_NE(message.find("broadcast 'mismatch.root': root rank differs across ranks"), std::string::npos) << message;

  message = error_of([&] {
    if (rank() == 0) {
      allreduce("mismatch.kind", b.view, b.view);
    } else {
      broadcast("mismatch.kind", b.view, 0);
    }
  });
  EXPECT_NE(message.find("operation differs across ranks"), std::string::npos) << message;

  // The runtime carries on after such errors.
  Tensor ok(DataType::kFloat32, {2});
  ok.set(0, 1);
  allreduce("mismatch.after", ok.view, ok.view, {ReduceOp::kSum});
  EXPECT_EQ(ok.get(0), size());
}

TEST(Mismatch, CachedTensorChangingShapeOnOneRank) {
  Tensor t(DataType::kFloat32, {4});
  allreduce("cached.then.changed", t.view, t.view);
  Tensor changed(DataType::kFloat32, {rank() == 0 ? 4 : 5});
  const std::string message = error_of([&] { allreduce("cached.then.changed", changed.view, changed.view); });
  EXPECT_NE(message.find("shape differs across ranks"), std::string::npos) << message;
}

TEST(Misuse, DuplicateNameInFlightRaises) {
  // Only rank 0 submits twice, and the others submit each name only after the barrier that
  // rank 0 enters after its tries: its first is certainly still in flight. (Were another rank
  // to try too, its first could complete before its second under load, and that second, never
  // waited for, would later run into freed memory when the other ranks join.)
  Tensor t(DataType::kFloat32, {size() * 2});
  using Submit = std::function<Handle(const std::string&)>;
  const std::vector<std::pair<std::string, Submit>> collectives = {
      {"allreduce", [&](const std::string& name) { return allreduce_async(name, t.view, t.view); }},
      {"allgather", [&](const std::string& name) { return allgather_async(name, t.view); }},
      {"broadcast", [&](const std::string& name) { return broadcast_async(name, t.view, 0); }},
      {"alltoall", [&](const std::string& name) { return alltoall_async(name, t.view); }},
      {"reducescatter", [&](const std::string& name) { return reducescatter_async(name, t.view); }},
  };
  std::vector<Handle> firsts(collectives.size());
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    const auto& [kind, submit] = collectives[i];
    if (rank() != 0) continue;
    firsts[i] = submit("dup." + kind);
    const std::string message = error_of([&] { submit("dup." + kind); });
    EXPECT_NE(message.find(kind + " 'dup." + kind + "' on rank 0: a collective with this name is already in flight"),
              std::string::npos)
        << message;
  }
  barrier();
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    const auto& [kind, submit] = collectives[i];
    if (rank() != 0) firsts[i] = submit("dup." + kind);
  }
  for (auto& first : firsts) first.wait();
}

TEST(Allgather, RanksWithDifferentFirstDimensions) {
  for (DataType dtype : all_dtypes()) {
    Tensor t(dtype, {rank(), 3});  // rank 0 contributes no rows
    for (std::size_t i = 0; i < t.size(); ++i) t.set(i, rank() * 10 + static_cast<double>(i % 3));
    auto h = allgather(std::string("gather.") + to_string(dtype), t.view);
    const TensorView out = h.output();
    const std::int64_t rows = size() * (size() - 1) / 2;
    ASSERT_EQ(out.shape, (std::vector<std::int64_t>{rows, 3}));
    std::vector<std::int64_t> rows_of_each_rank(size());
    for (int r = 0; r < size(); ++r) rows_of_each_rank[r] = r;
    EXPECT_EQ(h.received_splits(), rows_of_each_rank);
    std::size_t row = 0;
    for (int r = 0; r < size(); ++r) {
      for (int k = 0; k < r; ++k, ++row) {
        for (std::size_t c = 0; c < 3; ++c) ASSERT_EQ(testing::load(dtype, out.data, row * 3 + c), r * 10.0 + c);
      }
    }
  }
}

TEST(Allgather, DifferentTrailingDimensionsFail) {
  Tensor t(DataType::kFloat32, {2, rank() == 0 ? 3 : 4});
  const std::string message = error_of([&] { allgather("gather.bad", t.view); });
  EXPECT_NE(message.find("shape after the first dimension differs"), std::string::npos) << message;
}

TEST(Broadcast, FromEveryRoot) {
  for (int root = 0; root < size(); ++root) {
    Tensor t(DataType::kInt64, {2, 2});
    for (std::size_t i = 0; i < 4; ++i) t.set(i, rank() == root ? 1000 * root + static_cast<double>(i) : -1);
    broadcast("bcast." + std::to_string(root), t.view, root);
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(t.get(i), 1000 * root + static_cast<double>(i));
  }
}

TEST(Alltoall, DefaultSplits) {
  Tensor t(DataType::kFloat32, {2 * size(), 2});
  for (std::size_t i = 0; i < t.size(); ++i) t.set(i, rank() * 100 + static_cast<double>(i));
  auto exchanged = alltoall("a2a.default", t.view);
  const TensorView out = exchanged.output();
  ASSERT_EQ(out.shape, (std::vector<std::int64_t>{2 * size(), 2}));
  EXPECT_EQ(exchanged.received_splits(), std::vector<std::int64_t>(size(), 2));
  // From rank r this rank receives rows [2*rank, 2*rank + 2) of r's input.
  for (int r = 0; r < size(); ++r) {
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_EQ(testing::load(DataType::kFloat32, out.data, r * 4 + k), r * 100.0 + rank() * 4 + k);
    }
  }
}

TEST(Alltoall, ExplicitUnevenSplits) {
  // Rank r sends (r + j) rows to rank j, each row holding 1000*r + j.
  std::vector<std::int64_t> splits(size());
  std::int64_t rows = 0;
  for (int j = 0; j < size(); ++j) rows += splits[j] = rank() + j;
  Tensor t(DataType::kInt32, {rows});
  std::size_t i = 0;
  for (int j = 0; j < size(); ++j) {
    for (std::int64_t k = 0; k < splits[j]; ++k) t.set(i++, 1000 * rank() + j);
  }
  auto exchanged = alltoall("a2a.explicit", t.view, splits);
  std::vector<std::int64_t> expected_splits(size());
  for (int r = 0; r < size(); ++r) expected_splits[r] = r + rank();
  EXPECT_EQ(exchanged.received_splits(), expected_splits);
  const TensorView out = exchanged.output();
  std::size_t row = 0;
  for (int r = 0; r < size(); ++r) {
    for (std::int64_t k = 0; k < expected_splits[r]; ++k) {
      ASSERT_EQ(testing::load(DataType::kInt32, out.data, row++), 1000.0 * r + rank());
    }
  }
}

TEST(Alltoall, BadSplitsAreRejected) {
  Tensor t(DataType::kFloat32, {size() * 2 + 1});
  EXPECT_NE(error_of([&] { alltoall("a2a.indivisible", t.view); }).find("not divisible"), std::string::npos);
  EXPECT_NE(error_of([&] { alltoall("a2a.count", t.view, {1}); }).find("entries but there are"), std::string::npos);
  std::vector<std::int64_t> wrong_total(size(), 1);
  EXPECT_NE(error_of([&] { alltoall("a2a.total", t.view, wrong_total); }).find("add up to"), std::string::npos);
  std::vector<std::int64_t> negative(size(), 0);
  negative[0] = -1;
  negative[1] = size() * 2 + 2;
  EXPECT_NE(error_of([&] { alltoall("a2a.negative", t.view, negative); }).find("negative"), std::string::npos);
}

TEST(Reducescatter, EvenAndUnevenFirstDimensions) {
  for (std::int64_t rows : {static_cast<std::int64_t>(size()) * 2, std::int64_t{5}, std::int64_t{1}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
      Tensor t(DataType::kFloat32, {rows, 2});
      for (std::size_t i = 0; i < t.size(); ++i) t.set(i, contribution(rank(), i));
      auto scattered = reducescatter("rs." + std::to_string(rows) + "." + to_string(op), t.view, {op});
      const TensorView out = scattered.output();
      std::int64_t first_row = 0;
      for (int r = 0; r < rank(); ++r) first_row += rows / size() + (r < rows % size() ? 1 : 0);
      const std::int64_t my_rows = rows / size() + (rank() < rows % size() ? 1 : 0);
      ASSERT_EQ(out.shape, (std::vector<std::int64_t>{my_rows, 2}));
      for (std::int64_t k = 0; k < my_rows * 2; ++k) {
        const std::size_t global = static_cast<std::size_t>(first_row * 2 + k);
        ASSERT_EQ(testing::load(DataType::kFloat32, out.data, k),
                  expected_reduction(op, size(), global, DataType::kFloat32));
      }
    }
  }
}

TEST(Reducescatter, PrescaleAndPostscaleAndScalarsRefused) {
  Tensor t(DataType::kFloat64, {size()});
  for (int i = 0; i < size(); ++i) t.set(i, rank() + 1.0 + i);
  ReduceOptions options;
  options.op = ReduceOp::kSum;
  options.prescale_factor = 3.0;   // each contribution, before the sum
  options.postscale_factor = 0.5;  // the sum
  auto scattered = reducescatter("rs.scaled", t.view, options);
  const double sum = size() * (size() + 1) / 2.0 + size() * rank();  // sum over ranks r of (r + 1 + rank())
  EXPECT_EQ(testing::load(DataType::kFloat64, scattered.output().data, 0), 1.5 * sum);

  Tensor scalar(DataType::kFloat32, {});
  const std::string message = error_of([&] { reducescatter("rs.scalar", scalar.view); });
  EXPECT_NE(message.find("reducescatter 'rs.scalar'"), std::string::npos) << message;
  EXPECT_NE(message.find("needs at least one dimension"), std::string::npos) << message;
}

// Many allgathers and reducescatters in flight at once, and a barrier submitted among them:
// the barrier neither waits for them nor disturbs them, and every result is right.
TEST(Barrier, AmongManyAllgathersAndReducescattersInFlight) {
  const int count = 24;
  std::vector<Tensor> gathered_inputs, scattered_inputs;
  for (int k = 0; k < count; ++k) {
    gathered_inputs.emplace_back(DataType::kInt64, std::vector<std::int64_t>{2});
    scattered_inputs.emplace_back(DataType::kInt64, std::vector<std::int64_t>{size()});
    for (std::size_t i = 0; i < 2; ++i) gathered_inputs[k].set(i, 1000 * k + 10 * rank() + static_cast<double>(i));
    for (int i = 0; i < size(); ++i) scattered_inputs[k].set(i, k + i);
  }
  std::vector<Handle> gathers, scatters;
  for (int k = 0; k < count; ++k) {
    gathers.push_back(allgather_async("flight.gather." + std::to_string(k), gathered_inputs[k].view));
    scatters.push_back(
        reducescatter_async("flight.scatter." + std::to_string(k), scattered_inputs[k].view, {ReduceOp::kSum}));
    if (k == count / 2) barrier();
  }
  for (int k = 0; k < count; ++k) {
    gathers[k].wait();
    const TensorView gathered = gathers[k].output();
    ASSERT_EQ(gathered.shape, (std::vector<std::int64_t>{2 * size()}));
    for (int r = 0; r < size(); ++r) {
      for (int i = 0; i < 2; ++i)
        EXPECT_EQ(testing::load(DataType::kInt64, gathered.data, 2 * r + i), 1000 * k + 10 * r + i);
    }
    scatters[k].wait();
    const TensorView scattered = scatters[k].output();
    ASSERT_EQ(scattered.shape, (std::vector<std::int64_t>{1}));
    EXPECT_EQ(testing::load(DataType::kInt64, scattered.data, 0), size() * (k + rank()));
  }
}

TEST(Barrier, NoRankLeavesBeforeTheLastArrives) {
  // steady_clock is CLOCK_MONOTONIC, one clock for every process of this machine, so the
  // ranks' arrival and departure times can be compared directly.
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(100 * rank()));
  std::int64_t times[2];
  times[0] = now_ns();  // arrival
  barrier();
  times[1] = now_ns();  // departure
  auto gathered = allgather("barrier.times", {times, DataType::kInt64, {1, 2}});
  const auto* all = static_cast<const std::int64_t*>(gathered.output().data);
  std::int64_t last_arrival = 0, first_departure = INT64_MAX;
  for (int r = 0; r < size(); ++r) {
    last_arrival = std::max(last_arrival, all[2 * r]);
    first_departure = std::min(first_departure, all[2 * r + 1]);
  }
  EXPECT_GE(first_departure, last_arrival);
}

TEST(Join, EveryChoiceOfFirstJoiningRank) {
  for (int first = 0; first < size(); ++first) {
    // `first` joins at once. The others allreduce "x"; then every other rank but the
    // highest joins; the highest allreduces "y" (served by all the joined ranks) and joins last.
    const int last = first == size() - 1 ? size() - 2 : size() - 1;
    const std::string tag = std::to_string(first);
    int result;
    if (rank() == first) {
      result = join();
    } else {
      Tensor x(DataType::kFloat32, {3});
      for (std::size_t i = 0; i < 3; ++i) x.set(i, contribution(rank(), i));
      allreduce("join.x." + tag, x.view, x.view, {ReduceOp::kSum});
      for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(x.get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32) - contribution(first, i));
      }
      if (rank() == last) {
        Tensor y(DataType::kFloat64, {3});
        for (std::size_t i = 0; i < 3; ++i) y.set(i, contribution(rank(), i));
        allreduce("join.y." + tag, y.view, y.view, {ReduceOp::kSum});
        for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(y.get(i), contribution(rank(), i));
      }
      result = join();
    }
    EXPECT_EQ(result, last) << "first joiner " << first;
  }
}

// Uneven data: rank r has r + 1 steps, then joins. Every step reuses its names, so from the
// second step on they come through the response cache while ranks have joined. A joined rank
// contributes zeros: Average still divides by size().
TEST(Join, UnevenStepsWithSumAverageAndIntegerTensorsOnCachedNames) {
  for (int step = 0; step < rank() + 1; ++step) {
    double sum = 0;  // of (r + 1) over the ranks still stepping
    for (int r = step; r < size(); ++r) sum += r + 1;
    Tensor floats(DataType::kFloat32, {4}), doubles(DataType::kFloat64, {4}), ints(DataType::kInt32, {4});
    for (std::size_t i = 0; i < 4; ++i) {
      floats.set(i, rank() + 1);
      doubles.set(i, rank() + 1);
      ints.set(i, rank() + 1);
    }
    allreduce("uneven.sum.f32", floats.view, floats.view, {ReduceOp::kSum});
    allreduce("uneven.average.f64", doubles.view, doubles.view, {ReduceOp::kAverage});
    allreduce("uneven.sum.i32", ints.view, ints.view, {ReduceOp::kSum});
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(floats.get(i), sum) << "step " << step;
      EXPECT_NEAR(doubles.get(i), sum / size(), 1e-12) << "step " << step;  // one rounding of the division
      EXPECT_EQ(ints.get(i), sum) << "step " << step;
    }
  }
  EXPECT_EQ(join(), size() - 1);  // the same answer on every rank
}

// Joined ranks can serve an allreduce with zeros, but no allgather or broadcast: every rank
// that asked for one is told so, and the job goes on.
TEST(Join, AllgatherAndBroadcastWhileARankHasJoinedFailOnEveryRankThatAsked) {
  int last = -1;
  if (rank() == 0) {
    last = join();
  } else {
    Tensor t(DataType::kFloat32, {2});
    const std::string gather = error_of([&] { allgather("joined.gather", t.view); });
    EXPECT_NE(gather.find("cannot run while rank 0 joined"), std::string::npos) << gather;
    const std::string cast = error_of([&] { broadcast("joined.broadcast", t.view, 1); });
    EXPECT_NE(cast.find("cannot run while rank 0 joined"), std::string::npos) << cast;
    last = join();
  }
  EXPECT_NE(last, 0);  // the others joined after rank 0, in an order of their own
  Tensor mine(DataType::kInt32, {1});
  mine.set(0, last);
  const CollectiveResult everyone = allgather("joined.last", mine.view);
  for (int r = 0; r < size(); ++r) EXPECT_EQ(testing::load(DataType::kInt32, everyone.output().data, r), last);
}

// Bytes of any value, zeros included, and of a different length on every rank (none on rank 0).
std::string bytes_of_rank(int r) {
  std::string bytes;
  for (int i = 0; i < 3 * r; ++i) bytes.push_back(static_cast<char>((i * 37 + r) % 256));
  if (r > 0) bytes[0] = '\0';
  return bytes;
}

TEST(Objects, BroadcastFromEveryRootAndAllgatherOfDifferentLengths) {
  for (int root = 0; root < size(); ++root) {
    const std::string received =
        broadcast_object(bytes_of_rank(rank()), root, "object.broadcast." + std::to_string(root));
    EXPECT_EQ(received, bytes_of_rank(root)) << "root " << root;
  }
  const std::vector<std::string> everyone = allgather_object(bytes_of_rank(rank()), "object.allgather");
  ASSERT_EQ(everyone.size(), static_cast<std::size_t>(size()));
  for (int r = 0; r < size(); ++r) EXPECT_EQ(everyone[r], bytes_of_rank(r)) << "rank " << r;
}

TEST(Objects, RanksDisagreeingOnTheRootAreToldOnEveryRank) {
  const std::string message = error_of([] { broadcast_object("x", rank() == 0 ? 0 : 1, "object.disagree"); });
  EXPECT_NE(message.find("root rank differs"), std::string::npos) << message;
}

// A waiting thread runs the negotiation itself; with several threads waiting at once, one runs
// each cycle and the others must still see their own operations finish (not wait for a cycle
// nobody will run, nor take an operation of another thread as theirs).
TEST(Threads, SeveralThreadsWaitingAtOnceEachGetTheirOwnResults) {
  constexpr int kThreads = 4;
  constexpr int kSteps = 50;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([id, &failures] {
      try {
        Tensor t(DataType::kFloat32, {3});
        for (int step = 0; step < kSteps; ++step) {
          for (int i = 0; i < 3; ++i) t.set(i, (rank() + 1) * (id + 1) + step + i);
          const std::string name = "thread" + std::to_string(id);
          if (step % 2 == 0) {
            allreduce(name, t.view, t.view, {ReduceOp::kSum});
          } else {
            allreduce_async(name, t.view, t.view, {ReduceOp::kSum}).wait();  // woken loop, then waited for
          }
          const int n = size();
          for (int i = 0; i < 3; ++i) {
            const double expected = (id + 1) * n * (n + 1) / 2 + n * (step + i);
            if (t.get(i) != expected && failures[id].empty()) {
              failures[id] = "step " + std::to_string(step) + " element " + std::to_string(i) + ": " +
                             std::to_string(t.get(i)) + " instead of " + std::to_string(expected);
            }
          }
        }
      } catch (const std::exception& e) {
        failures[id] = e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int id = 0; id < kThreads; ++id) EXPECT_EQ(failures[id], "") << "thread " << id;
}

// An operation nobody waits for still completes: the loop's own thread runs the cycles.
TEST(Threads, AnOperationNobodyWaitsForCompletes) {
  Tensor t(DataType::kFloat32, {1});
  t.set(0, 1);
  Handle h = allreduce_async("unwaited", t.view, t.view, {ReduceOp::kSum});
  for (int polls = 0; !h.poll() && polls < 60000; ++polls) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(h.poll());
  EXPECT_EQ(t.get(0), size());
}

// Shutting down while another thread waits for an operation the other ranks never submit: the
// waiter is told the runtime shut down (no hang, no use of a freed loop), and dtrain starts again.
TEST(Lifecycle, ShutdownWhileAnotherThreadWaits) {
  const int r = rank();
  Tensor t(DataType::kFloat32, {1});
  std::string message;
  std::thread waiter;
  if (r == 0) {
    Handle h = allreduce_async("only.on.rank0", t.view, t.view);
    waiter = std::thread([h, &message] { message = error_of([&] { h.wait(); }); });
  }
  barrier();  // the others ask to shut down only once rank 0's operation is in flight
  shutdown();
  if (waiter.joinable()) waiter.join();
  if (r == 0) {
    EXPECT_NE(message.find("shut down"), std::string::npos) << message;
  }
  init();
  t.set(0, 1);
  allreduce("after.shutdown.with.waiter", t.view, t.view, {ReduceOp::kSum});
  EXPECT_EQ(t.get(0), size());
}

// Gloo writes to sockets without MSG_NOSIGNAL: with SIGPIPE's default action a rank writing
// to a peer that died is killed too (an elastic job then cannot shrink), instead of its
// operation failing with WorkersLostError.
TEST(Lifecycle, InitIgnoresSigpipeSoAWriteToADeadPeerIsAnError) {
  struct sigaction action {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &action), 0);
  EXPECT_EQ(action.sa_handler, SIG_IGN);
}

TEST(Lifecycle, InitShutdownInit) {
  const int r = rank(), n = size();
  shutdown();
  EXPECT_FALSE(is_initialized());
  init();
  EXPECT_EQ(rank(), r);
  EXPECT_EQ(size(), n);
  Tensor t(DataType::kFloat32, {1});
  t.set(0, 1);
  allreduce("after.reinit", t.view, t.view, {ReduceOp::kSum});
  EXPECT_EQ(t.get(0), n);
}

// Run only by the job tests (job_test.cc), which set the knobs they need.
TEST(JobOnly, WarningThenBothProceed) {
  if (rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  Tensor t(DataType::kFloat32, {1});
  t.set(0, 1);
  allreduce("late.tensor", t.view, t.view, {ReduceOp::kSum});
  EXPECT_EQ(t.get(0), size());
}

// The same for a tensor the ranks have reduced before (cached: the shortcut's path, where a
// rank holds its submission until every rank has one). Rank 1 comes 4 s late; rank 0's held
// submission goes to the coordinator after a second, whose stall inspector then names rank 1.
TEST(JobOnly, CachedTensorWarningThenBothProceed) {
  Tensor t(DataType::kFloat32, {1});
  for (int round = 0; round < 2; ++round) {
    if (round == 1 && rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(4000));
    t.set(0, 1);
    allreduce("late.cached.tensor", t.view, t.view, {ReduceOp::kSum});
    EXPECT_EQ(t.get(0), size());
  }
}

TEST(JobOnly, ShutdownFailsEveryRankNamingTheMissingRank) {
  Tensor t(DataType::kFloat32, {1});
  // Rank 0's tensor stalls first, so it is the one the shutdown names on every rank.
  if (rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const std::string message =
      error_of([&] { allreduce(rank() == 0 ? "a.only.on.rank0" : "b.only.elsewhere", t.view, t.view); });
  EXPECT_NE(message.find("stall"), std::string::npos) << message;
  EXPECT_NE(message.find("allreduce 'a.only.on.rank0'"), std::string::npos) << message;
  EXPECT_NE(message.find("missing on ranks [1"), std::string::npos) << message;
  // Later calls report the same reason rather than hanging.
  EXPECT_NE(error_of([&] { allreduce("after.stall", t.view, t.view); }).find("stall"), std::string::npos);
}

TEST(JobOnly, WorksLongerThanTheStartTimeout) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  barrier();
}

// Records two parts of the run into DTRAIN_TEST_TIMELINE_DIR/{first,second}.json; job_test
// reads them. "straddle" is submitted by rank 0 before the first timeline starts and by the
// others only after it has, so its negotiation began before the file did.
TEST(JobOnly, TimelineStartedReplacedAndStoppedAtRunTime) {
  const std::string dir = std::getenv("DTRAIN_TEST_TIMELINE_DIR");
  Tensor t(DataType::kFloat32, {8});
  allreduce("before.timeline", t.view, t.view);
  if (rank() == 0) {
    EXPECT_NE(error_of([] { start_timeline("/nonexistent-dir/t.json"); }).find("/nonexistent-dir/t.json"),
              std::string::npos);
  }
  Tensor straddle(DataType::kFloat32, {8});
  Handle pending;
  if (rank() == 0) pending = allreduce_async("straddle", straddle.view, straddle.view);
  start_timeline(dir + "/first.json", /*mark_cycles=*/true);
  barrier();
  if (rank() != 0) pending = allreduce_async("straddle", straddle.view, straddle.view);
  pending.wait();
  for (int step = 0; step < 3; ++step) allreduce("during.first", t.view, t.view);
  start_timeline(dir + "/second.json");
  allreduce("during.second", t.view, t.view);
  stop_timeline();
  stop_timeline();  // stopping what is stopped does nothing
  // Rank 0's coordinator records what reaches it while its timeline is on: another rank's
  // request sent before rank 0 has stopped would be in the file. The barrier completes only
  // once rank 0 has stopped.
  barrier();
  allreduce("after.timeline", t.view, t.view);
}

TEST(JobOnly, RankOneDiesHoldingTheSharedSegment) {
  Tensor t(DataType::kFloat32, {4});
  allreduce("before.the.crash", t.view, t.view);  // the segment is mapped and in use
  if (rank() == 1) raise(SIGKILL);
  std::this_thread::sleep_for(std::chrono::seconds(30));  // the launcher stops the others
}

}  // namespace
}  // namespace dtrain
