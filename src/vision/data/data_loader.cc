#include "vision/data/data_loader.h"

#include <algorithm>

#include <fmt/format.h>

#include "vision/data/image_codec.h"
#include "vision/coco/coco_error.h"

namespace dtrain::vision {

TrainingSample load_training_sample(const CocoDataset& dataset, uint32_t index, const TransformOptions& transforms,
                                    uint64_t seed) {
  const DatasetImage& info = dataset.images().at(index);
  const std::string path = dataset.image_path(info);
  RgbImage image = read_image(path);
  if (image.height != info.height || image.width != info.width) {
    throw CocoError(fmt::format("{}: image is {}x{} (width x height) but {} says {}x{} for image id {}", path,
                                image.width, image.height, dataset.source(), info.width, info.height, info.id));
  }
  TrainingSample sample;
  sample.image_id = info.id;
  sample.dataset_index = index;
  sample.original_height = info.height;
  sample.original_width = info.width;
  TransformedSample t = transform_sample(std::move(image), make_instance_targets(dataset, info), transforms, seed);
  sample.flipped = t.flipped;
  sample.scale = t.scale;
  sample.image = std::move(t.image);
  sample.targets = std::move(t.targets);
  return sample;
}

DataLoader::DataLoader(const CocoDataset& dataset, LoaderOptions options)
    : dataset_(dataset), options_(std::move(options)) {
  if (options_.workers < 1) throw CocoError("loader: at least one worker thread is needed");
  if (options_.prefetch_batches < 1) options_.prefetch_batches = 1;
  items_ = options_.training ? dataset_.training_indices() : dataset_.all_indices();
  workers_.reserve(static_cast<size_t>(options_.workers));
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
}

DataLoader::~DataLoader() {
  {
    concurrency::MutexLock lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& t : workers_) t.join();
}

void DataLoader::stop_current_epoch(concurrency::MutexLock& lock) {
  next_task_ = tasks_.size();
  // The wait predicates here and in work() and next() run with mutex_ held (a wait takes it
  // back first).
  batch_ready_.wait(lock, [this]() DTRAIN_REQUIRES(mutex_) { return in_flight_ == 0; });
}

void DataLoader::start_epoch(uint64_t epoch, size_t first_batch) {
  std::vector<std::vector<uint32_t>> plan =
      plan_epoch(items_, options_.seed, epoch, options_.rank, options_.world_size, options_.shuffle,
                 {options_.batch_size, options_.drop_last, options_.group_by_aspect_ratio}, [this](uint32_t i) {
                   const DatasetImage& image = dataset_.images()[i];
                   return !(image.width > image.height);
                 });
  concurrency::MutexLock lock(mutex_);
  stop_current_epoch(lock);
  epoch_ = epoch;
  plan_ = std::move(plan);
  tasks_.clear();
  slots_.assign(plan_.size(), {});
  first_batch = std::min(first_batch, plan_.size());
  for (uint32_t b = static_cast<uint32_t>(first_batch); b < plan_.size(); ++b) {
    slots_[b].samples.resize(plan_[b].size());
    slots_[b].errors.resize(plan_[b].size());
    slots_[b].remaining = plan_[b].size();
    for (uint32_t p = 0; p < plan_[b].size(); ++p) tasks_.push_back({b, p});
  }
  next_task_ = 0;
  consumed_ = first_batch;
  lock.unlock();
  work_ready_.notify_all();
}

void DataLoader::work() {
  concurrency::MutexLock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this]() DTRAIN_REQUIRES(mutex_) {
      return stopping_ ||
             (next_task_ < tasks_.size() && tasks_[next_task_].batch < consumed_ + options_.prefetch_batches);
    });
    if (stopping_) return;
    const Task task = tasks_[next_task_++];
    ++in_flight_;
    const uint32_t index = plan_[task.batch][task.position];
    const uint64_t seed = mix_seed(options_.seed, epoch_, index);
    lock.unlock();
    std::optional<TrainingSample> sample;
    std::exception_ptr error;
    try {
      sample = load_training_sample(dataset_, index, options_.transforms, seed);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    Slot& slot = slots_[task.batch];
    slot.samples[task.position] = std::move(sample);
    slot.errors[task.position] = error;
    --in_flight_;
    if (--slot.remaining == 0 || in_flight_ == 0) batch_ready_.notify_all();
  }
}

std::optional<SampleBatch> DataLoader::next() {
  concurrency::MutexLock lock(mutex_);
  while (consumed_ < plan_.size()) {
    const size_t b = consumed_;
    batch_ready_.wait(lock, [&]() DTRAIN_REQUIRES(mutex_) { return slots_[b].remaining == 0; });
    Slot slot = std::move(slots_[b]);
    ++consumed_;
    lock.unlock();
    work_ready_.notify_all();
    SampleBatch batch;
    batch.index = b;
    for (size_t p = 0; p < slot.samples.size(); ++p) {
      if (slot.errors[p]) {
        if (options_.policy == BadInputPolicy::kError) std::rethrow_exception(slot.errors[p]);
        try {
          std::rethrow_exception(slot.errors[p]);
        } catch (const std::exception& e) {
          emit_warning(options_.warn, std::string(e.what()) + "; skipping the sample");
        }
        continue;
      }
      batch.samples.push_back(std::move(*slot.samples[p]));
    }
    if (!batch.samples.empty()) return batch;
    lock.lock();
  }
  return std::nullopt;
}

}  // namespace dtrain::vision
