#include "apps/maskrcnn/batch_feeder.h"

#include <c10/core/DeviceGuard.h>

#include <optional>
#include <stdexcept>
#include <utility>

namespace dtrain::maskrcnn {

BatchFeeder::BatchFeeder(vision::DataLoader& loader, FeederOptions options)
    : loader_(loader),
      options_(std::move(options)),
      pinned_(options_.device.is_cuda()),
      ahead_(pinned_ || options_.collate_ahead) {
  if (options_.batches_per_epoch == 0) {
    throw std::invalid_argument(options_.annotations + ": not enough training images for one batch per rank");
  }
  const auto start = static_cast<uint64_t>(options_.start_iteration);
  epoch_ = start / options_.batches_per_epoch;
  loader_.start_epoch(epoch_, static_cast<size_t>(start % options_.batches_per_epoch));
  if (ahead_) thread_ = std::thread([this] { prefetch(); });
}

BatchFeeder::~BatchFeeder() {
  {
    concurrency::MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

BatchFeeder::HostBatch BatchFeeder::collate_next() {
  std::optional<vision::SampleBatch> batch = loader_.next();
  if (!batch) {
    loader_.start_epoch(++epoch_);
    batch = loader_.next();
    if (!batch) throw std::runtime_error(options_.annotations + ": no usable training images left in an epoch");
  }
  HostBatch out{vision::collate_batch(batch->samples, options_.size_divisible, pinned_), {}};
  for (const vision::TrainingSample& sample : batch->samples) out.dataset_indices.push_back(sample.dataset_index);
  return out;
}

void BatchFeeder::prefetch() {
  // Pinned memory belongs to the current GPU: this rank's, not cuda:0 (a new thread's default,
  // where every rank would otherwise open a context).
  const c10::DeviceGuard on_this_gpu(options_.device);
  try {
    for (;;) {
      {
        concurrency::MutexLock lock(mutex_);
        // The predicates run with mutex_ held (a wait takes it back first).
        changed_.wait(lock, [&]() DTRAIN_REQUIRES(mutex_) { return stopping_ || ready_.size() < kAhead; });
        if (stopping_) return;
      }
      HostBatch batch = collate_next();
      {
        concurrency::MutexLock lock(mutex_);
        ready_.push_back(std::move(batch));
      }
      changed_.notify_all();
    }
  } catch (...) {
    {
      concurrency::MutexLock lock(mutex_);
      error_ = std::current_exception();
    }
    changed_.notify_all();
  }
}

ModelInputs BatchFeeder::to_device(HostBatch batch) const {
  // From pinned memory the copy is queued, not waited for; on the CPU .to() returns the tensor
  // itself. The targets stay on the host: the model checks them there (no GPU round trip per
  // check) and moves them itself.
  ModelInputs inputs;
  inputs.images.tensors = batch.tensors.images.to(options_.device, /*non_blocking=*/pinned_);
  inputs.images.image_sizes.assign(batch.tensors.image_sizes.begin(), batch.tensors.image_sizes.end());
  for (const vision::TensorTargets& target : batch.tensors.targets) {
    inputs.targets.push_back({target.boxes, target.labels, target.masks});
  }
  inputs.dataset_indices = std::move(batch.dataset_indices);
  return inputs;
}

ModelInputs BatchFeeder::next() {
  if (!ahead_) return to_device(collate_next());
  concurrency::MutexLock lock(mutex_);
  // Batches collated before an error are still handed out, in order.
  changed_.wait(lock, [&]() DTRAIN_REQUIRES(mutex_) { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  HostBatch batch = std::move(ready_.front());
  ready_.pop_front();
  lock.unlock();
  changed_.notify_all();
  return to_device(std::move(batch));
}

}  // namespace dtrain::maskrcnn
