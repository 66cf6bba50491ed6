#include "training/training_log.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dtrain::training {

TrainingLog::TrainingLog(const std::filesystem::path& output_dir)
    : json_path_(output_dir / "metrics.json"),
      json_(json_path_, std::ios::app),
      events_(std::make_unique<metrics::EventFileWriter>(output_dir.string())) {
  if (!json_) throw std::runtime_error(json_path_.string() + ": cannot open for appending: " + std::strerror(errno));
}

void TrainingLog::write(int64_t iteration, const std::string& group,
                        const std::vector<std::pair<std::string, double>>& scalars) {
  if (!events_) return;
  nlohmann::ordered_json line;
  line["iteration"] = iteration;
  // JSON has no NaN: a diverged loss is written as null rather than making the file unreadable.
  for (const auto& [name, value] : scalars) line[name] = std::isfinite(value) ? nlohmann::ordered_json(value) : nullptr;
  json_ << line.dump() << "\n";
  json_.flush();
  if (!json_) throw std::runtime_error(json_path_.string() + ": cannot write: " + std::strerror(errno));
  std::vector<std::pair<std::string, double>> tagged;
  for (const auto& [name, value] : scalars) tagged.emplace_back(group + "/" + name, value);
  events_->add_scalars(iteration, tagged);
}

}  // namespace dtrain::training
