#pragma once

// The loader's batches, epoch after epoch, as the model takes them on its device. On the CPU
// a batch is collated when asked for. For a GPU a thread of its own collates the next batch
// into pinned host memory while the current step runs, and next() only queues the images'
// copy to the GPU (non-blocking, on the current stream, so it is ordered before the step's
// kernels and the CPU does not wait for it). Targets stay in host memory: the model checks
// them there and moves them (MaskRcnnImpl::batch_losses).
#include <ATen/ATen.h>

#include <cstdint>
#include <deque>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "concurrency/mutex.h"
#include "vision/data/batch_collate.h"
#include "vision/data/data_loader.h"
#include "vision/modeling/image_transform.h"

namespace dtrain::maskrcnn {

// A batch as the model takes it: images padded into one tensor on the model's device, each
// image's targets on the host, and which images of the data set they are (their random
// samples are drawn per image).
struct ModelInputs {
  vision::modeling::ImageBatch images;
  std::vector<vision::DetectionTargets> targets;
  std::vector<uint32_t> dataset_indices;
};

struct FeederOptions {
  int64_t start_iteration = 0;   // the data order continues where an interrupted run stopped
  size_t batches_per_epoch = 0;  // this rank's
  int64_t size_divisible = 32;
  at::Device device = at::kCPU;
  // A thread collates ahead (always for a GPU; on the CPU it would compete with the step
  // for the same cores).
  bool collate_ahead = false;
  std::string annotations;  // names the data set in errors
};

class BatchFeeder {
 public:
  // Throws std::invalid_argument when the data set has not one batch per rank.
  BatchFeeder(vision::DataLoader& loader, FeederOptions options);
  ~BatchFeeder();
  BatchFeeder(const BatchFeeder&) = delete;
  BatchFeeder& operator=(const BatchFeeder&) = delete;

  // The next batch on the device; rethrows what loading or collating it threw.
  ModelInputs next();

 private:
  // A batch collated on the host.
  struct HostBatch {
    vision::TensorBatch tensors;
    std::vector<uint32_t> dataset_indices;
  };

  HostBatch collate_next();  // the loader's next batch, the epoch turned over when it ends
  ModelInputs to_device(HostBatch batch) const;
  void prefetch();  // the thread's loop

  vision::DataLoader& loader_;
  const FeederOptions options_;
  const bool pinned_;  // host batches in pinned memory (for a GPU)
  const bool ahead_;   // collated by thread_
  uint64_t epoch_ = 0;

  // Between prefetch() and next(): at most kAhead collated batches, or the error that ended
  // the thread.
  static constexpr size_t kAhead = 2;
  concurrency::Mutex mutex_;
  concurrency::ConditionVariable changed_;
  std::deque<HostBatch> ready_ DTRAIN_GUARDED_BY(mutex_);
  std::exception_ptr error_ DTRAIN_GUARDED_BY(mutex_);
  bool stopping_ DTRAIN_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace dtrain::maskrcnn
