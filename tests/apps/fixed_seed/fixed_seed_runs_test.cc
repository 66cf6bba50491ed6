// The training the user sees, pinned for a fixed seed: dtrain-mnist and dtrain-maskrcnn
// train on two ranks and their losses, learning rates, accuracy and final weights (a SHA-256
// of the model file) are compared with the run recorded in tests/data/fixed_seed/. A change
// to the training engine, the hooks or the step must leave them bit for bit as they were
// (issue #45: "same losses bit for bit for a fixed seed"). A change meant to alter training
// records the new run and says why in its commit:
//
//   DTRAIN_RECORD_FIXED_SEED=1 ctest -R apps.FixedSeedRuns
//
// LibTorch computes on one thread per rank: what it computes then does not depend on the
// machine's cores or load, only on its processor (which kernels LibTorch and OpenBLAS pick).
// So a recording names its processor (model, widest vector unit, family and model numbers: two
// "AMD EPYC, avx512f" of different generations round differently), a file holds one recording
// per processor it was recorded on, and the comparison is bit for bit against this processor's;
// on a processor with none, the numbers must agree with the first recording to 1% and the
// weights' hashes are not compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain::apps {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::JobResult;
using dtrain::testing::run_job;
using dtrain::testing::TempDir;

const fs::path kRecorded = FIXED_SEED_DIR;

std::string sha256_of(const fs::path& file) {
  const JobResult sum = run_job("sha256sum " + file.string());
  if (sum.exit_code != 0) return "sha256sum failed: " + sum.output;
  return sum.output.substr(0, sum.output.find(' '));
}

// The processor, as the kernels' choice depends on it: its model and the widest vector unit.
std::string processor() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string model = "unknown", vectors = "sse", family_number, model_number;
  for (std::string line; std::getline(cpuinfo, line);) {
    const std::string value = line.find(':') == std::string::npos ? "" : line.substr(line.find(':') + 1);
    if (line.rfind("model name", 0) == 0 && model == "unknown") model = line.substr(line.find(':') + 2);
    if (line.rfind("cpu family", 0) == 0 && family_number.empty()) family_number = value;
    if (line.rfind("model\t", 0) == 0 && model_number.empty()) model_number = value;
    if (line.rfind("flags", 0) == 0) {
      if (line.find(" avx512f") != std::string::npos) {
        vectors = "avx512f";
      } else if (line.find(" avx2") != std::string::npos && vectors != "avx512f") {
        vectors = "avx2";
      }
    }
  }
  return model + ", " + vectors + ", family" + family_number + " model" + model_number;
}

// A recording file: for each processor it was recorded on, "processor: ..." and the run.
using Recordings = std::vector<std::pair<std::string, std::string>>;

Recordings read_recordings(const fs::path& file) {
  Recordings recordings;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("processor: ", 0) == 0) {
      recordings.push_back({line.substr(11), ""});
    } else if (!recordings.empty()) {
      recordings.back().second += line + "\n";
    }
  }
  return recordings;
}

void write_recordings(const fs::path& file, const Recordings& recordings) {
  std::ofstream out(file);
  for (const auto& [recorded_on, run] : recordings) out << "processor: " << recorded_on << "\n" << run;
}

// The numbers in `text` and the text with each replaced by "#".
std::pair<std::vector<double>, std::string> numbers_of(const std::string& text) {
  static const std::regex number(R"(-?[0-9]+\.[0-9]+(e-?[0-9]+)?|-?[0-9]+e-?[0-9]+)");
  std::vector<double> values;
  for (std::sregex_iterator it(text.begin(), text.end(), number), end; it != end; ++it) {
    values.push_back(std::stod(it->str()));
  }
  return {values, std::regex_replace(text, number, "#")};
}

// Another processor's run: the same lines, each number within 1% (or 1e-3), hashes left out.
void expect_close(const std::string& fingerprint, const std::string& recorded) {
  const std::regex hash_line(R"([^\n]*sha256[^\n]*\n)");
  const auto [got, got_shape] = numbers_of(std::regex_replace(fingerprint, hash_line, ""));
  const auto [want, want_shape] = numbers_of(std::regex_replace(recorded, hash_line, ""));
  ASSERT_EQ(got_shape, want_shape);
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-3 + 1e-2 * std::abs(want[i])) << "number " << i << " of\n" << fingerprint;
  }
}

// Compares `fingerprint` with this processor's recording, or records it for this processor
// (DTRAIN_RECORD_FIXED_SEED=1; the other processors' recordings are kept).
void expect_recorded(const std::string& name, const std::string& fingerprint) {
  const fs::path file = kRecorded / (name + ".txt");
  const std::string here = processor();
  Recordings recordings = read_recordings(file);
  const auto mine = std::find_if(recordings.begin(), recordings.end(),
                                 [&](const auto& recording) { return recording.first == here; });
  const char* record = std::getenv("DTRAIN_RECORD_FIXED_SEED");
  if (record && std::string(record) == "1") {
    if (mine != recordings.end()) {
      mine->second = fingerprint;
    } else {
      recordings.push_back({here, fingerprint});
    }
    write_recordings(file, recordings);
    GTEST_SKIP() << "recorded " << file << " for " << here;
  }
  ASSERT_FALSE(recordings.empty()) << file << ": missing (DTRAIN_RECORD_FIXED_SEED=1 records it)";
  if (mine != recordings.end()) {
    EXPECT_EQ(fingerprint, mine->second)
        << "the run differs from " << file << " as recorded on " << here
        << " (if the change means to alter training, record it again on every processor listed there)";
  } else {
    expect_close(fingerprint, recordings.front().second);
  }
}

TEST(FixedSeedRuns, MnistOnTwoRanksLossesAccuracyAndWeightsAsRecorded) {
  TempDir dir;
  const JobResult run =
      run_job(std::string(DTRAIN_CLI) + " run -np 2 -- " + DTRAIN_MNIST + " --data-dir " + MNIST_DATA_DIR +
                  " --steps 20 --log-every 5 --threads 1 --seed 42 --model-dir " + (dir.path() / "model").string(),
              240);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // "Step #5\tLoss: 2.101234\timages/s: ...": the loss, not the speed.
  std::string fingerprint;
  const std::regex loss(R"(\[0\]<stdout>:(Step #\d+\tLoss: [0-9.]+)\t)");
  for (std::sregex_iterator it(run.output.begin(), run.output.end(), loss), end; it != end; ++it) {
    fingerprint += (*it)[1].str() + "\n";
  }
  std::smatch accuracy;
  ASSERT_TRUE(std::regex_search(run.output, accuracy, std::regex(R"(Test accuracy: [0-9.]+)"))) << run.output;
  fingerprint += accuracy[0].str() + "\n";
  fingerprint += "model.pt sha256 " + sha256_of(dir.path() / "model" / "model.pt") + "\n";
  expect_recorded("mnist_2_ranks", fingerprint);
}

TEST(FixedSeedRuns, MaskRcnnOnTwoRanksLossesLearningRatesAndWeightsAsRecorded) {
  TempDir dir;
  const std::string shapes = (dir.path() / "shapes").string();
  const JobResult made = run_job(std::string(DTRAIN_CLI) + " data make-shapes --out " + shapes +
                                 " --train 8 --val 2 --size 96 --seed 3 --threads 1");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  const std::string output = (dir.path() / "out").string();
  const JobResult run = run_job(
      std::string(DTRAIN_CLI) + " run -np 2 -- " + DTRAIN_MASKRCNN + " train --threads 1 --config-file " +
          SHAPES_CONFIG + " DATASETS.TRAIN_ANNOTATIONS " + shapes +
          "/annotations/instances_train.json DATASETS.TRAIN_IMAGES " + shapes + "/train DATASETS.TEST_ANNOTATIONS " +
          shapes + "/annotations/instances_val.json DATASETS.TEST_IMAGES " + shapes +
          "/val INPUT.MIN_SIZE_TEST 96 INPUT.MAX_SIZE_TEST 128 INPUT.MIN_SIZE_TRAIN 96 "
          "INPUT.MAX_SIZE_TRAIN 128 SOLVER.BASE_LR 0.01 SOLVER.MAX_ITER 4 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 1 "
          "SOLVER.CHECKPOINT_PERIOD 2 SOLVER.WARMUP_ITERS 2 SEED 7 OUTPUT_DIR " +
          output,
      240);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // metrics.json holds every logged number at full precision (the losses and learning rates,
  // the final evaluation's AP); all but the speed are pinned.
  std::string fingerprint;
  std::ifstream metrics(output + "/metrics.json");
  ASSERT_TRUE(metrics) << run.output;
  for (std::string line; std::getline(metrics, line);) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::parse(line);
    entry.erase("images_per_s");
    fingerprint += entry.dump() + "\n";
  }
  fingerprint += "model_0000002.pth sha256 " + sha256_of(output + "/model_0000002.pth") + "\n";
  fingerprint += "model_final.pth sha256 " + sha256_of(output + "/model_final.pth") + "\n";
  expect_recorded("maskrcnn_2_ranks", fingerprint);
}

}  // namespace
}  // namespace dtrain::apps
