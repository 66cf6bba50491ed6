#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <fcntl.h>
#include <set>
#include <thread>
#include <unistd.h>

#include "job/channel_stager.h"
#include "job/container_layout.h"
#include "job/job_spec.h"
#include "job/pipe_feeder.h"
#include "tests/job/test_support.h"

namespace dtrain::job {
namespace {

using testing::read_file;
using testing::TempDir;
using testing::write_file;

std::vector<std::string> keys(int n) {
  std::vector<std::string> k;
  for (int i = 0; i < n; ++i) k.push_back("f" + std::to_string(100 + i));
  return k;
}

TEST(Sharding, ShardsAreDisjointCompleteAndNearlyEqual) {
  for (int files : {0, 1, 2, 3, 7, 10, 100}) {
    for (int hosts : {1, 2, 3, 4, 16}) {
      std::vector<std::string> all = keys(files);
      std::vector<std::string> together;
      size_t smallest = SIZE_MAX, largest = 0;
      for (int h = 0; h < hosts; ++h) {
        auto shard = shard_for_host(all, h, hosts);
        smallest = std::min(smallest, shard.size());
        largest = std::max(largest, shard.size());
        together.insert(together.end(), shard.begin(), shard.end());
      }
      EXPECT_EQ(together, all) << files << " files on " << hosts << " hosts";  // disjoint, complete, in order
      EXPECT_LE(largest - smallest, 1u);
    }
  }
  // Hosts beyond the file count get none.
  auto all = keys(2);
  EXPECT_EQ(shard_for_host(all, 0, 3).size(), 1u);
  EXPECT_EQ(shard_for_host(all, 1, 3).size(), 1u);
  EXPECT_TRUE(shard_for_host(all, 2, 3).empty());
}

TEST(ChannelStager, ListsFilesRecursivelySorted) {
  TempDir dir;
  write_file(dir / "src/b.bin", "bb");
  write_file(dir / "src/a/z.bin", "z");
  write_file(dir / "src/a/c.bin", "ccc");
  EXPECT_EQ(list_channel_files(dir / "src"), (std::vector<std::string>{"a/c.bin", "a/z.bin", "b.bin"}));
}

TEST(ChannelStager, CopiesShardsAndMounts) {
  TempDir dir;
  for (int i = 0; i < 5; ++i) write_file(dir / ("src/f" + std::to_string(i)), std::string(10 + i, 'x'));
  ChannelSpec channel;
  channel.name = "train";
  channel.source = dir / "src";
  ContainerLayout layout(dir / "root");

  ChannelStaging full = stage_channel(channel, layout, "algo-1", 0, 2);
  EXPECT_EQ(full.method, "copy");
  EXPECT_EQ(full.files, 5u);
  EXPECT_EQ(full.bytes, 10u + 11 + 12 + 13 + 14);
  EXPECT_EQ(read_file(layout.channel_dir("train") + "/f4"), std::string(14, 'x'));

  channel.distribution = Distribution::kShardedByKey;
  ChannelStaging shard = stage_channel(channel, layout, "algo-2", 1, 2);
  EXPECT_EQ(shard.method, "shard");
  EXPECT_EQ(list_channel_files(layout.channel_dir("train")), (std::vector<std::string>{"f3", "f4"}));

  channel.distribution = Distribution::kFullyReplicated;
  channel.shared = true;
  ChannelStaging shared = stage_channel(channel, layout, "algo-1", 0, 2);
  EXPECT_EQ(shared.method, "shared");
  EXPECT_TRUE(std::filesystem::is_symlink(layout.channel_dir("train")));
  EXPECT_EQ(std::filesystem::canonical(layout.channel_dir("train")), std::filesystem::canonical(dir / "src"));
}

std::string read_fifo(const std::string& path, double timeout_s) {
  for (double waited = 0; waited < timeout_s && !std::filesystem::exists(path); waited += 0.01) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return read_file(path);
}

TEST(PipeFeeder, StreamsEveryByteOfEveryFileEachEpoch) {
  ::signal(SIGPIPE, SIG_IGN);
  TempDir dir;
  std::string expected;
  std::vector<std::string> files;
  for (int i = 0; i < 3; ++i) {
    std::string bytes;
    for (int k = 0; k < 70000 * (i + 1) + i; ++k) bytes += static_cast<char>((k * 31 + i) & 0xFF);
    write_file(dir / ("src/f" + std::to_string(i)), bytes);
    files.push_back(dir / ("src/f" + std::to_string(i)));
    expected += bytes;
  }
  std::filesystem::create_directories(dir / "data");
  PipeFeeder feeder(dir / "data", "train", files);
  feeder.start();
  EXPECT_EQ(read_fifo(dir / "data/train_0", 5), expected);
  EXPECT_EQ(read_fifo(dir / "data/train_1", 5), expected);
  feeder.stop();
  EXPECT_EQ(feeder.epochs_completed(), 2);
  EXPECT_EQ(feeder.bytes_written(), 2 * expected.size());
  EXPECT_TRUE(feeder.error().empty()) << feeder.error();
}

}  // namespace
}  // namespace dtrain::job
