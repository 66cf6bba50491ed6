// Writes TensorBoard event files of scalar summaries, so `tensorboard --logdir DIR` plots the
// loss and mAP curves of a training run. No TensorFlow, protobuf or LibTorch involved: the
// few messages needed are hand-encoded (proto_encoder.h) and framed as TFRecords
// (tfrecord_writer.h). See docs/tensorboard.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "metrics/tfrecord_writer.h"

namespace dtrain::metrics {

class EventFileWriter {
 public:
  // Creates `log_dir` (and its parents) if needed and a new file in it named
  //   events.out.tfevents.<unix seconds>.<hostname>.<pid>.<counter>
  // where <counter> counts the writers of this process, so no two share a file. The file
  // starts with the version record (file_version "brain.Event:2"). Throws MetricsError.
  explicit EventFileWriter(const std::string& log_dir);

  // One scalar at a training step, e.g. add_scalar("train/loss", 0.25, 1200). TensorBoard
  // stores scalars as 32-bit floats. Throws MetricsError (also for an empty tag).
  void add_scalar(const std::string& tag, double value, std::int64_t step);
  // Several scalars of one step in one record, e.g. {{"eval/bbox_mAP", 0.37}, {"eval/segm_mAP", 0.34}}.
  void add_scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars);

  // Records reach the OS as they are added; flush() also puts them on disk (fdatasync).
  void flush();

  // The event file's full path.
  const std::string& path() const { return records_.path(); }

 private:
  TFRecordWriter records_;
};

}  // namespace dtrain::metrics
