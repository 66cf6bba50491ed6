#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "concurrency/mutex.h"
#include "vision/data/bad_input_policy.h"
#include "vision/data/coco_dataset.h"
#include "vision/data/instance_targets.h"
#include "vision/data/sample_plan.h"
#include "vision/data/transforms.h"

namespace dtrain::vision {

// One image ready for the model: normalised and resized, with its targets
// at the same size.
struct TrainingSample {
  int64_t image_id = 0;
  uint32_t dataset_index = 0;  // into CocoDataset::images()
  uint32_t original_height = 0;
  uint32_t original_width = 0;
  bool flipped = false;
  float scale = 1;
  FloatImage image;
  InstanceTargets targets;
};

// Decodes, builds targets and transforms one image; its random choices come
// from `seed` alone.
TrainingSample load_training_sample(const CocoDataset& dataset, uint32_t index, const TransformOptions& transforms,
                                    uint64_t seed);

struct SampleBatch {
  size_t index = 0;  // position in the epoch
  std::vector<TrainingSample> samples;
};

struct LoaderOptions {
  size_t batch_size = 2;
  int workers = 2;              // decoding threads
  size_t prefetch_batches = 4;  // batches decoded ahead of the consumer
  uint64_t seed = 0;            // shared by all ranks
  bool shuffle = true;
  int rank = 0;
  int world_size = 1;
  bool group_by_aspect_ratio = false;
  bool drop_last = false;
  // Training reads CocoDataset::training_indices() (torchvision's filter);
  // otherwise every usable image, in file order unless shuffled.
  bool training = true;
  TransformOptions transforms;
  BadInputPolicy policy = BadInputPolicy::kError;
  WarningSink warn;
};

// Feeds training: worker threads decode and transform the samples of the
// epoch's batch plan (plan_epoch: sharded by rank, reshuffled per epoch,
// optionally grouped by aspect ratio) into a bounded window of
// prefetch_batches batches, and next() hands batches out in plan order. The
// order and the bytes of every batch depend only on the dataset, the
// options' seed and the epoch, never on the number of workers.
//
// A sample that cannot be loaded (a missing or corrupt image) makes next()
// throw CocoError naming the file, or under BadInputPolicy::kSkip is left out
// of its batch with a warning (a batch left empty is skipped).
class DataLoader {
 public:
  DataLoader(const CocoDataset& dataset, LoaderOptions options);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Plans `epoch` and starts decoding it from batch `first_batch` (a resumed
  // run skips the batches it has trained on without decoding them); abandons
  // what is left of the last epoch.
  void start_epoch(uint64_t epoch, size_t first_batch = 0);
  // The next batch of the epoch, or nullopt when the epoch is done.
  std::optional<SampleBatch> next();

  const std::vector<std::vector<uint32_t>>& plan() const { return plan_; }
  const std::vector<uint32_t>& items() const { return items_; }

 private:
  struct Task {
    uint32_t batch;
    uint32_t position;
  };
  struct Slot {
    std::vector<std::optional<TrainingSample>> samples;
    std::vector<std::exception_ptr> errors;
    size_t remaining = 0;
  };

  void work();
  void stop_current_epoch(concurrency::MutexLock& lock) DTRAIN_REQUIRES(mutex_);

  const CocoDataset& dataset_;
  LoaderOptions options_;
  std::vector<uint32_t> items_;
  uint64_t epoch_ DTRAIN_GUARDED_BY(mutex_) = 0;
  // Written by start_epoch() with mutex_ held and read by the workers with it held, but also
  // read without it by the consumer's thread (plan(), the thread that calls start_epoch()):
  // not DTRAIN_GUARDED_BY, which cannot say that.
  std::vector<std::vector<uint32_t>> plan_;

  concurrency::Mutex mutex_;
  concurrency::ConditionVariable work_ready_;
  concurrency::ConditionVariable batch_ready_;
  std::vector<Task> tasks_ DTRAIN_GUARDED_BY(mutex_);
  std::vector<Slot> slots_ DTRAIN_GUARDED_BY(mutex_);
  size_t next_task_ DTRAIN_GUARDED_BY(mutex_) = 0;
  size_t consumed_ DTRAIN_GUARDED_BY(mutex_) = 0;
  size_t in_flight_ DTRAIN_GUARDED_BY(mutex_) = 0;
  bool stopping_ DTRAIN_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace dtrain::vision
