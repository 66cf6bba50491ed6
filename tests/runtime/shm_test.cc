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
#include "tests/runtime/tensor_values.h"

namespace dtrain::runtime {
namespace {

using dtrain::testing::Tensor;

std::string unique_name(const std::string& what) {
  return std::string(SharedSegment::kNamePrefix) + std::to_string(getpid()) + "-test-" + what;
}

// Runs `body(rank, engine)` on `ranks` threads sharing one freshly created segment.
void with_local_ranks(int ranks, const std::string& name, const std::function<void(int, ShmAllreduce&)>& body) {
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
          engine.allreduce({{inputs[r].view.data, count}}, dtype, op);
        });
        for (int r = 0; r < ranks; ++r) {
          for (std::size_t i = 0; i < count; i += 997) {
            double expected = 1 + static_cast<double>(i % 3);
            for (int k = 1; k < ranks; ++k) {
              const double v = (k + 1) + static_cast<double>(i % 3);
              expected = op == ReduceOp::kSum   ? expected + v
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

// Fused tensors reduced where they are, the result scaled as the engine reduces it (what the
// runtime asks for Average and postscale): every element of every piece, on every rank, equals
// the scaled sum, whichever rank reduced it and wherever a piece or a chunk boundary falls.
TEST(ShmAllreduce, PiecesAcrossChunksComeBackReducedAndScaled) {
  const std::vector<std::size_t> sizes = {5, ShmAllreduce::kSlotBytes / 4 + 3, 1, ShmAllreduce::kSlotBytes / 2 - 9};
  for (int ranks : {2, 3}) {
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16}) {
      std::vector<std::vector<Tensor>> data(ranks);
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t size : sizes) {
          data[r].emplace_back(dtype, std::vector<std::int64_t>{static_cast<std::int64_t>(size)});
          for (std::size_t i = 0; i < size; ++i) data[r].back().set(i, (r + 1) * 2 + static_cast<double>(i % 5) * 4);
        }
      }
      with_local_ranks(ranks, unique_name("scaled"), [&](int r, ShmAllreduce& engine) {
        std::vector<BufferPiece> pieces;
        for (auto& piece : data[r])
          pieces.push_back({piece.view.data, static_cast<std::size_t>(piece.view.num_elements())});
        engine.allreduce(pieces, dtype, ReduceOp::kSum, 0.25);
      });
      for (int r = 0; r < ranks; ++r) {
        for (std::size_t p = 0; p < sizes.size(); ++p) {
          for (std::size_t i = 0; i < sizes[p]; ++i) {
            // Sums of small even numbers times a power of two: exact in every dtype tested.
            const double expected = (ranks * (ranks + 1) + ranks * static_cast<double>(i % 5) * 4) * 0.25;
            ASSERT_EQ(data[r][p].get(i), expected)
                << to_string(dtype) << " rank " << r << " piece " << p << " element " << i;
          }
        }
      }
    }
  }
}

TEST(ShmAllreduce, ReduceScatterThenAllgatherAcrossUnevenPiecesAndChunks) {
  // What the hierarchical allreduce does: reduce in the host, work on this rank's shares only
  // (here: multiply by 10, standing in for the cross-host allreduce), gather the shares.
  const std::vector<std::size_t> sizes = {3, ShmAllreduce::kSlotBytes / 4 + 5, 7, ShmAllreduce::kSlotBytes / 8};
  for (int ranks : {2, 3}) {
    std::vector<std::vector<std::vector<float>>> data(ranks);
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> shares(ranks);
    with_local_ranks(ranks, unique_name("phases"), [&](int r, ShmAllreduce& engine) {
      std::vector<BufferPiece> pieces;
      for (std::size_t size : sizes) {
        data[r].emplace_back(size, static_cast<float>(r + 1));
        pieces.push_back({data[r].back().data(), size});
      }
      engine.reduce_scatter(pieces, DataType::kFloat32, ReduceOp::kSum);
      std::size_t count = 0;
      for (std::size_t size : sizes) count += size;
      shares[r] = engine.my_shares(count, DataType::kFloat32);
      for (const auto& [b, e] : shares[r]) {
        std::size_t start = 0;
        for (auto& piece : data[r]) {
          for (std::size_t i = std::max(b, start); i < std::min(e, start + piece.size()); ++i) piece[i - start] *= 10;
          start += piece.size();
        }
      }
      engine.allgather(pieces, DataType::kFloat32);
    });
    const float expected = 10.0f * ranks * (ranks + 1) / 2;
    for (int r = 0; r < ranks; ++r) {
      for (const auto& piece : data[r]) {
        for (std::size_t i = 0; i < piece.size(); i += 101) ASSERT_EQ(piece[i], expected) << "rank " << r;
        ASSERT_EQ(piece.back(), expected);
      }
    }
    // The ranks' shares tile the tensor exactly once.
    std::size_t covered = 0;
    for (const auto& list : shares) {
      for (const auto& [b, e] : list) covered += e - b;
    }
    std::size_t count = 0;
    for (std::size_t size : sizes) count += size;
    EXPECT_EQ(covered, count);
  }
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

// A local rank that dies is named at once (an elastic job recovers from it), not after the
// timeout, which is set far beyond the test's own limit here.
TEST(ShmAllreduce, ADeadLocalRankIsALostWorkerAtOnce) {
  const std::string name = unique_name("dead-peer");
  SharedSegment created = SharedSegment::create(name, ShmAllreduce::segment_bytes(2));
  ShmAllreduce::format(created, 2);
  ShmAllreduce survivor(std::move(created), 0, 2, std::chrono::hours(1));
  const pid_t peer = fork();
  if (peer == 0) {
    ShmAllreduce dying(SharedSegment::open(name, ShmAllreduce::segment_bytes(2)), 1, 2, std::chrono::hours(1));
    _exit(0);  // gone before the barrier
  }
  int status = 0;
  waitpid(peer, &status, 0);
  try {
    survivor.barrier();
    FAIL() << "the barrier passed without local rank 1";
  } catch (const WorkersLostError& e) {
    EXPECT_NE(std::string(e.what()).find("local rank 1 (pid " + std::to_string(peer) + ") exited"), std::string::npos)
        << e.what();
  }
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
