// The shared-memory engine on its own: ranks are threads of this process mapping one segment.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "runtime/transport/shm/shared_segment.h"
#include "runtime/transport/shm/shm_allreduce.h"
#include "tensor_values.h"

namespace dtrain::runtime {
namespace {

using dtrain::testing::Tensor;

std::string unique_name(const std::string& what) {
  return std::string(SharedSegment::kNamePrefix) + std::to_string(getpid()) + "-test-" + what;
}

// Runs `body(rank, engine)` on `ranks` threads sharing one freshly created segment.
void with_local_ranks(int ranks, const std::string& name,
                      const std::function<void(int, ShmAllreduce&)>& body) {
  SharedSegment created = SharedSegment::create(name, ShmAllreduce::segment_bytes(ranks));
  ShmAllreduce::format(created, ranks);
  std::vector<std::unique_ptr<ShmAllreduce>> engines;
  for (int r = 0; r < ranks; ++r) {
    SharedSegment segment = r == 0 ? std::move(created) : SharedSegment::open(name, ShmAllreduce::segment_bytes(ranks));
    engines.push_back(std::make_unique<ShmAllreduce>(std::move(segment), r, ranks, std::chrono::seconds(30)));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { body(r, *engines[r]); });
  for (auto& t : threads) t.join();
}

TEST(ShmAllreduce, EveryDtypeAndOpAcrossSeveralChunks) {
  for (int ranks : {2, 3}) {
    // More elements than one slot holds for every dtype, and an uneven tail.
    const std::size_t count = ShmAllreduce::kSlotBytes * 2 / 2 + 7;
    for (DataType dtype : dtrain::testing::all_dtypes()) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        std::vector<Tensor> inputs;
        for (int r = 0; r < ranks; ++r) {
          inputs.emplace_back(dtype, std::vector<std::int64_t>{static_cast<std::int64_t>(count)});
          for (std::size_t i = 0; i < count; ++i) inputs[r].set(i, (r + 1) + static_cast<double>(i % 3));
        }
        with_local_ranks(ranks, unique_name("ops"), [&](int r, ShmAllreduce& engine) {
          engine.allreduce(inputs[r].view.data, count, dtype, op);
        });
        for (int r = 0; r < ranks; ++r) {
          for (std::size_t i = 0; i < count; i += 997) {
            double expected = 1 + static_cast<double>(i % 3);
            for (int k = 1; k < ranks; ++k) {
              const double v = (k + 1) + static_cast<double>(i % 3);
              expected = op == ReduceOp::kSum ? expected + v
                         : op == ReduceOp::kMin ? std::min(expected, v)
                         : op == ReduceOp::kMax ? std::max(expected, v)
                                                : expected * v;
            }
            ASSERT_EQ(inputs[r].get(i), expected) << to_string(dtype) << " " << to_string(op) << " rank " << r;
          }
        }
      }
    }
  }
}

TEST(ShmAllreduce, ShareHookSeesEachRanksReducedShare) {
  std::atomic<std::size_t> seen{0};
  with_local_ranks(2, unique_name("hook"), [&](int r, ShmAllreduce& engine) {
    std::vector<float> data(10, static_cast<float>(r + 1));
    engine.allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum,
                     [&](void* share, std::size_t n) {
                       EXPECT_EQ(static_cast<float*>(share)[0], 3.0f);
                       seen += n;
                     });
    EXPECT_EQ(data[9], 3.0f);
  });
  EXPECT_EQ(seen.load(), 10u);  // the two shares cover the tensor once
}

TEST(SharedSegment, UnlinkedSegmentLeavesNoName) {
  const std::string name = unique_name("unlink");
  {
    SharedSegment segment = SharedSegment::create(name, 4096);
    EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + name));
    segment.unlink();
    EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + name));
    static_cast<char*>(segment.data())[0] = 1;  // the mapping outlives the name
  }
  EXPECT_THROW(SharedSegment::open(name, 4096), Error);
}

TEST(SharedSegment, StaleSegmentsOfDeadCreatorsAreRemoved) {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);  // `child` is now a pid nobody has
  const std::string stale = std::string(SharedSegment::kNamePrefix) + std::to_string(child) + "-stale-host0";
  const std::string live = unique_name("live");
  // What a creator killed between creating and unlinking its segment leaves behind.
  const int fd = shm_open(("/" + stale).c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  SharedSegment mine = SharedSegment::create(live, 4096);
  ASSERT_TRUE(std::filesystem::exists("/dev/shm/" + stale));
  remove_stale_segments();
  EXPECT_FALSE(std::filesystem::exists("/dev/shm/" + stale));
  EXPECT_TRUE(std::filesystem::exists("/dev/shm/" + live));  // our own pid is alive
}

}  // namespace
}  // namespace dtrain::runtime
