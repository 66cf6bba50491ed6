#pragma once

// Where rank 0's numbers go besides stdout: OUTPUT_DIR/metrics.json (one
// JSON object per line, Detectron2's file name) and TensorBoard event files
// in OUTPUT_DIR, so `tensorboard --logdir OUTPUT_DIR` plots the loss, the
// learning rate and the AP curves. Other ranks hold an inactive log.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "metrics/event_file_writer.h"

namespace dtrain::training {

class TrainingLog {
 public:
  TrainingLog() = default;  // inactive
  explicit TrainingLog(const std::filesystem::path& output_dir);

  // One line {"iteration": N, "<name>": value, ...} and the same scalars at
  // step N in TensorBoard, tagged "<group>/<name>" (group "train" or "eval").
  void write(int64_t iteration, const std::string& group, const std::vector<std::pair<std::string, double>>& scalars);

  bool active() const { return events_ != nullptr; }
  std::string events_path() const { return events_ ? events_->path() : std::string(); }

 private:
  std::filesystem::path json_path_;
  std::ofstream json_;
  std::unique_ptr<metrics::EventFileWriter> events_;
};

}  // namespace dtrain::training
