#include "runtime/autotuner.h"

#include <algorithm>

#include <fmt/format.h>

#include "dtrain/error.h"

namespace dtrain::runtime {
namespace {

template <typename T>
void put_first(std::vector<T>& values, const T& first) {
  values.erase(std::remove(values.begin(), values.end(), first), values.end());
  values.insert(values.begin(), first);
}

}  // namespace

Autotuner::Autotuner(TunedKnobs defaults, AutotuneOptions options)
    : defaults_(defaults), options_(std::move(options)), current_(defaults) {
  // The defaults are measured first in each phase: a search that finds nothing better ends
  // where it began.
  put_first(options_.fusion_thresholds, defaults.fusion_threshold_bytes);
  put_first(options_.cycle_times_ms, defaults.cycle_time_ms);
  if (!options_.log_path.empty()) {
    log_ = std::make_unique<std::ofstream>(options_.log_path);
    if (!*log_) throw Error("dtrain: DTRAIN_AUTOTUNE_LOG: cannot write " + options_.log_path);
    *log_ << "sample,phase,fusion_threshold_bytes,cycle_time_ms,steps,bytes,seconds,bytes_per_s\n";
    log_->flush();
  }
  if (options_.warmup_samples <= 0) phase_ = Phase::kFusion;
}

void Autotuner::record(const std::vector<std::pair<std::string, std::size_t>>& allreduces, Clock::time_point now) {
  // Each occurrence of the reference starts a step: the tensors before it in this cycle end
  // the previous step, it and those after it begin the next, so a sample holds whole steps.
  for (const auto& [name, bytes] : allreduces) {
    if (phase_ == Phase::kDone) return;
    if (reference_.empty()) {
      reference_ = name;
      sample_start_ = now;
      steps_ = 0;
      bytes_ = 0;
    } else if (name == reference_ && ++steps_ >= options_.steps_per_sample) {
      finish_sample(now);
    }
    bytes_ += bytes;
  }
}

void Autotuner::finish_sample(Clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - sample_start_).count();
  const double score = seconds > 0 ? static_cast<double>(bytes_) / seconds : 0;
  log_sample(seconds, score);
  // The next sample starts at this same step boundary, under the settings chosen now.
  sample_start_ = now;
  steps_ = 0;
  bytes_ = 0;
  advance(score);
}

void Autotuner::advance(double score) {
  file_score(score);
  choose_next_knobs();
}

// Files the finished sample's score under the phase it belongs to; moves to the next phase
// when this one has sampled every candidate.
void Autotuner::file_score(double score) {
  switch (phase_) {
    case Phase::kWarmup:
      if (++warmups_done_ >= options_.warmup_samples) {
        phase_ = Phase::kFusion;
        candidate_ = 0;
      }
      break;
    case Phase::kFusion:
      fusion_scores_.push_back({current_, score});
      if (++candidate_ >= options_.fusion_thresholds.size()) {
        phase_ = Phase::kCycle;
        candidate_ = 0;
      }
      break;
    case Phase::kCycle:
      cycle_scores_.push_back({current_, score});
      if (++candidate_ >= options_.cycle_times_ms.size()) {
        phase_ = Phase::kConfirm;
        candidate_ = 0;
      }
      break;
    case Phase::kConfirm:
      confirm_scores_.push_back({current_, score});
      ++candidate_;
      break;
    case Phase::kDone: break;
  }
}

// The settings of the next sample, or the choice once the search is over.
void Autotuner::choose_next_knobs() {
  auto best = [](const std::vector<Scored>& scored) {
    return std::max_element(scored.begin(), scored.end(),
                            [](const Scored& a, const Scored& b) { return a.score < b.score; })
        ->knobs;
  };
  switch (phase_) {
    case Phase::kWarmup: current_ = defaults_; break;
    case Phase::kFusion: current_ = {options_.fusion_thresholds[candidate_], defaults_.cycle_time_ms}; break;
    case Phase::kCycle:
      current_ = {best(fusion_scores_).fusion_threshold_bytes, options_.cycle_times_ms[candidate_]};
      break;
    case Phase::kConfirm: {
      const TunedKnobs winner = best(cycle_scores_);
      // The winner and the defaults take turns, confirm_samples each.
      const std::size_t turns = 2 * static_cast<std::size_t>(std::max(1, options_.confirm_samples));
      if (winner == defaults_ || candidate_ >= turns) {
        current_ = winner == defaults_ ? defaults_ : confirmed(winner);
        phase_ = Phase::kDone;
        if (log_) {
          *log_ << fmt::format("{},final,{},{},,,,\n", samples_, current_.fusion_threshold_bytes,
                               current_.cycle_time_ms);
          log_->flush();
        }
      } else {
        current_ = candidate_ % 2 == 0 ? winner : defaults_;
      }
      break;
    }
    case Phase::kDone: break;
  }
}

// The winner if its median confirmation score beats the defaults' by the margin.
TunedKnobs Autotuner::confirmed(const TunedKnobs& winner) const {
  auto median_of = [this](const TunedKnobs& knobs) {
    std::vector<double> scores;
    for (const auto& s : confirm_scores_) {
      if (s.knobs == knobs) scores.push_back(s.score);
    }
    std::sort(scores.begin(), scores.end());
    return scores.empty() ? 0.0 : scores[scores.size() / 2];
  };
  return median_of(winner) > median_of(defaults_) * (1 + options_.confirm_margin) ? winner : defaults_;
}

void Autotuner::log_sample(double seconds, double score) {
  ++samples_;
  if (!log_) return;
  *log_ << fmt::format("{},{},{},{},{},{},{:.6f},{:.6g}\n", samples_, phase_name(phase_),
                       current_.fusion_threshold_bytes, current_.cycle_time_ms, steps_, bytes_, seconds, score);
  log_->flush();
}

const char* Autotuner::phase_name(Phase phase) {
  switch (phase) {
    case Phase::kWarmup: return "warmup";
    case Phase::kFusion: return "fusion";
    case Phase::kCycle: return "cycle";
    case Phase::kConfirm: return "confirm";
    case Phase::kDone: return "done";
  }
  return "?";
}

}  // namespace dtrain::runtime
