#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace dtrain::job {

// SageMaker's Pipe input mode for one channel on one host: creates the FIFO
// <data_dir>/<channel>_<epoch> (epoch 0, 1, ...), and when the algorithm
// opens it, writes every file of the channel into it in order and closes it
// (the reader sees end of file), then offers the next epoch's FIFO. Runs in
// its own thread until stop(). A reader that closes early ends that epoch.
class PipeFeeder {
 public:
  PipeFeeder(std::string data_dir, std::string channel, std::vector<std::string> files);
  ~PipeFeeder();
  PipeFeeder(const PipeFeeder&) = delete;
  PipeFeeder& operator=(const PipeFeeder&) = delete;

  void start();
  void stop();

  std::string fifo_path(int epoch) const;
  int epochs_completed() const { return epochs_completed_.load(); }
  uint64_t bytes_written() const { return bytes_written_.load(); }
  const std::string& channel() const { return channel_; }
  const std::string& error() const { return error_; }  // set when the feeder gave up

 private:
  void run();
  bool wait_for_reader(const std::string& path, int& fd);
  bool write_file(int fd, const std::string& file);

  std::string data_dir_;
  std::string channel_;
  std::vector<std::string> files_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> epochs_completed_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::string error_;
};

}  // namespace dtrain::job
