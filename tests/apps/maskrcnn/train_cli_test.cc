// `dtrain-maskrcnn train` run as a user runs it: two ranks under `dtrain run`
// on a generated shapes dataset, a few iterations of the CPU config.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::JobResult;
using dtrain::testing::run_job;
using dtrain::testing::TempDir;

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const JobResult made = run_job(std::string(DTRAIN_CLI) + " data make-shapes --out " + dir_.path().string() +
                                   "/shapes --train 8 --val 2 --size 96 --seed 3 --threads 1");
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }

  // Two ranks, one thread each, the given extra overrides. A gentler learning
  // rate than the config's: these runs are a few steps on eight images.
  // `launcher_flags` go to dtrain run, `trainer_flags` to dtrain-maskrcnn train.
  JobResult train(const std::string& extra, int ranks = 2, const std::string& launcher_flags = "",
                  const std::string& trainer_flags = "") {
    const std::string shapes = dir_.path().string() + "/shapes";
    return run_job(std::string(DTRAIN_CLI) + " run " + launcher_flags + " -np " + std::to_string(ranks) + " -- " +
                       DTRAIN_MASKRCNN + " train " + trainer_flags + " --threads 1 --config-file " + SHAPES_CONFIG +
                       " DATASETS.TRAIN_ANNOTATIONS " + shapes +
                       "/annotations/instances_train.json DATASETS.TRAIN_IMAGES " + shapes +
                       "/train INPUT.MIN_SIZE_TRAIN 96 INPUT.MAX_SIZE_TRAIN 128 SOLVER.BASE_LR 0.01 OUTPUT_DIR " +
                       output() + test_set() + " " + extra,
                   240);
  }
  std::string test_set() const {
    const std::string shapes = dir_.path().string() + "/shapes";
    return " DATASETS.TEST_ANNOTATIONS " + shapes + "/annotations/instances_val.json DATASETS.TEST_IMAGES " + shapes +
           "/val INPUT.MIN_SIZE_TEST 96 INPUT.MAX_SIZE_TEST 128";
  }
  std::string output() const { return dir_.path().string() + "/out"; }

  TempDir dir_;
};

TEST_F(TrainCli, TwoRanksTrainLogEveryPeriodAndRankZeroWritesCheckpointsAndTheFinalModel) {
  const JobResult run = train(
      "SOLVER.MAX_ITER 4 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 2 SOLVER.CHECKPOINT_PERIOD 2 SOLVER.WARMUP_ITERS 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("Training Mask R-CNN on 2 rank(s): 2 images per step (1 per rank), 4 iterations"),
            std::string::npos)
      << run.output;
  // The documented progress line, once per period, from rank 0 only.
  const std::regex line(
      R"(\[0\]<stdout>:iter: (\d+)/4  loss_box_reg: [0-9.]+  loss_classifier: [0-9.]+  loss_mask: [0-9.]+  )"
      R"(loss_objectness: [0-9.]+  loss_rpn_box_reg: [0-9.]+  total_loss: [0-9.]+  lr: [0-9.e-]+  )"
      R"(images/s: [0-9.]+  eta: \d+ s)");
  std::vector<std::string> iterations;
  for (std::sregex_iterator it(run.output.begin(), run.output.end(), line), end; it != end; ++it) {
    iterations.push_back((*it)[1]);
  }
  EXPECT_EQ(iterations, (std::vector<std::string>{"2", "4"})) << run.output;
  EXPECT_EQ(run.output.find("[1]<stdout>:iter"), std::string::npos) << "only rank 0 logs";
  EXPECT_TRUE(fs::exists(output() + "/model_0000002.pth"));
  EXPECT_TRUE(fs::exists(output() + "/model_final.pth"));
  EXPECT_FALSE(fs::exists(output() + "/model_0000004.pth")) << "the last iteration is the final model";

  // The final model is what predict loads.
  const JobResult predicted =
      run_job(std::string(DTRAIN_MASKRCNN) + " predict --threads 1 --config-file " + SHAPES_CONFIG + " --weights " +
              output() + "/model_final.pth --input " + dir_.path().string() + "/shapes/val --output " +
              dir_.path().string() + "/predictions");
  EXPECT_EQ(predicted.exit_code, 0) << predicted.output;
}

TEST_F(TrainCli, TwoWorkersTrainThroughParameterServersAndTheChiefWritesAndEvaluatesTheModel) {
  const JobResult run = train("SOLVER.MAX_ITER 4 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 2 SOLVER.CHECKPOINT_PERIOD 2",
                              2, "--ps", "--distribution ps");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("[0]<stdout>:Parameter servers: async updates"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[0]<stdout>:iter: 4/4"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("[0]<stdout>:eval: iter: 4"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("[1]<stdout>:eval:"), std::string::npos) << "only the chief evaluates";
  EXPECT_TRUE(fs::exists(output() + "/model_0000002.pth"));
  EXPECT_TRUE(fs::exists(output() + "/model_final.pth"));
}

TEST_F(TrainCli, ABatchThatDoesNotSplitEvenlyOverTheRanksIsRefusedOnEveryRank) {
  const JobResult run = train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 3");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("SOLVER.IMS_PER_BATCH 3 must be a positive multiple of the number of ranks (2)"),
            std::string::npos)
      << run.output;
}

TEST_F(TrainCli, AnUnknownModelDeviceIsRefusedNamingTheKey) {
  const JobResult run = train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 MODEL.DEVICE tpu", 1);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("MODEL.DEVICE must be cpu or cuda, got 'tpu'"), std::string::npos) << run.output;
}

// What a CPU can check of mixed precision: bfloat16 under autocast with channels-last weights
// trains on two ranks, and float16 (a GPU's, with loss scaling) is refused naming the keys.
TEST_F(TrainCli, Bfloat16MixedPrecisionTrainsOnTwoRanksAndFloat16WantsAGpu) {
  const JobResult run = train(
      "SOLVER.MAX_ITER 4 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 2 SOLVER.CHECKPOINT_PERIOD 0 SOLVER.AMP.ENABLED true "
      "SOLVER.AMP.DTYPE bfloat16 MODEL.CHANNELS_LAST true");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("iter: 4/4"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("loss_scale"), std::string::npos) << "bfloat16 needs no loss scale";

  const JobResult float16 =
      train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 SOLVER.AMP.ENABLED true SOLVER.AMP.DTYPE float16", 1);
  EXPECT_NE(float16.exit_code, 0);
  EXPECT_NE(float16.output.find("SOLVER.AMP.DTYPE float16 needs MODEL.DEVICE cuda"), std::string::npos)
      << float16.output;
}

// Gradients travel as bfloat16 (half the bytes); an unknown dtype is refused naming the key.
TEST_F(TrainCli, CompressedGradientsTrainOnTwoRanksAndAnUnknownDtypeIsRefused) {
  const JobResult run = train(
      "SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 2 SOLVER.CHECKPOINT_PERIOD 0 "
      "SOLVER.GRADIENT_COMPRESSION.ENABLED true SOLVER.GRADIENT_COMPRESSION.MIN_BYTES 1024");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("iter: 2/2"), std::string::npos) << run.output;

  const JobResult float8 = train(
      "SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 SOLVER.GRADIENT_COMPRESSION.ENABLED true "
      "SOLVER.GRADIENT_COMPRESSION.DTYPE float8",
      1);
  EXPECT_NE(float8.exit_code, 0);
  EXPECT_NE(float8.output.find("SOLVER.GRADIENT_COMPRESSION.DTYPE: \"float8\", expected \"float16\" or \"bfloat16\""),
            std::string::npos)
      << float8.output;
}

// Weight gradients travel as PowerSGD's factors after one exact step; PowerSGD together with a
// compressed dtype is refused naming both keys.
TEST_F(TrainCli, PowerSgdTrainsOnTwoRanksAndRefusesACompressedDtypeBesideIt) {
  const JobResult run = train(
      "SOLVER.MAX_ITER 3 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 3 SOLVER.CHECKPOINT_PERIOD 0 "
      "SOLVER.POWER_SGD.RANK 2 SOLVER.POWER_SGD.START_STEP 1");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("iter: 3/3"), std::string::npos) << run.output;

  const JobResult both = train(
      "SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 SOLVER.POWER_SGD.RANK 2 SOLVER.GRADIENT_COMPRESSION.ENABLED true", 1);
  EXPECT_NE(both.exit_code, 0);
  EXPECT_NE(both.output.find("SOLVER.POWER_SGD.RANK: 2 with SOLVER.GRADIENT_COMPRESSION.ENABLED True"),
            std::string::npos)
      << both.output;
}

// Detectron2's rule: training stops at a NaN or infinite loss, naming the iteration, before any
// checkpoint of the lost weights is written. (Every rank throws at the same check; which
// rank's line the launcher shows first is a race, so the test reads either.)
TEST_F(TrainCli, ADivergingLossEndsTrainingOnTwoRanksNamingTheIteration) {
  const JobResult run = train(
      "SOLVER.MAX_ITER 6 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 3 SOLVER.CHECKPOINT_PERIOD 3 SOLVER.WARMUP_ITERS 0 "
      "SOLVER.BASE_LR 1e6 SEED 1");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find(": the loss became NaN or infinite at iteration "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("lower SOLVER.BASE_LR or enable SOLVER.CLIP_GRADIENTS"), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(output() + "/model_final.pth"));
}

TEST_F(TrainCli, AClassCountThatDisagreesWithTheDatasetIsRefused) {
  const JobResult run = train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 MODEL.ROI_HEADS.NUM_CLASSES 7", 1);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("3 categories, but MODEL.ROI_HEADS.NUM_CLASSES is 7"), std::string::npos) << run.output;
}

TEST_F(TrainCli, AMissingEvaluationSetIsRefusedBeforeTraining) {
  const JobResult run = train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 DATASETS.TEST_IMAGES /nonexistent/val");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("DATASETS.TEST_ANNOTATIONS/TEST_IMAGES: /nonexistent/val does not exist"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(run.output.find("iter: "), std::string::npos) << "no training before the check";
}

TEST_F(TrainCli, AnUnknownConfigKeyIsAUsageError) {
  const JobResult run =
      run_job(std::string(DTRAIN_MASKRCNN) + " train --config-file " + SHAPES_CONFIG + " SOLVER.MAX_ITERS 5");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("SOLVER.MAX_ITERS"), std::string::npos) << run.output;
}

TEST_F(TrainCli, EvaluationIsShardedOverTheRanksAndRankZeroReportsApWritesResultsMetricsAndTensorBoard) {
  const JobResult run = train("SOLVER.MAX_ITER 4 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 2 TEST.EVAL_PERIOD 2 SEED 5");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Once at EVAL_PERIOD, once at the end; the documented line with AP in 0..1.
  const std::regex eval_line(R"(\[0\]<stdout>:eval: iter: (\d+)  bbox/AP: ([0-9.]+)  bbox/AP50: [0-9.]+  )"
                             R"(bbox/AP75: [0-9.]+  segm/AP: ([0-9.]+)  segm/AP50: [0-9.]+  segm/AP75: [0-9.]+)");
  std::vector<std::string> evaluated;
  for (std::sregex_iterator it(run.output.begin(), run.output.end(), eval_line), end; it != end; ++it) {
    evaluated.push_back((*it)[1]);
    EXPECT_LE(std::stod((*it)[2]), 1.0);
  }
  EXPECT_EQ(evaluated, (std::vector<std::string>{"2", "4"})) << run.output;
  EXPECT_NE(run.output.find("Evaluation at iteration 4: 2 images"), std::string::npos) << run.output;
  EXPECT_EQ(run.output.find("[1]<stdout>:eval:"), std::string::npos) << "only rank 0 reports";

  // The results file holds both ranks' images, with the dataset's category ids.
  const std::string results = dtrain::testing::read_file(output() + "/inference/coco_instances_results.json");
  ASSERT_FALSE(results.empty());
  // metrics.json: a line per log period and per evaluation.
  const std::string metrics = dtrain::testing::read_file(output() + "/metrics.json");
  EXPECT_NE(metrics.find("{\"iteration\":2,\"loss_box_reg\":"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"segm/AP\":"), std::string::npos) << metrics;

  // TensorBoard's file, read back by an independent reader that checks every CRC.
  std::string events;
  for (const auto& entry : fs::directory_iterator(output())) {
    if (entry.path().filename().string().starts_with("events.out.tfevents.")) events = entry.path().string();
  }
  ASSERT_FALSE(events.empty());
  const JobResult read = run_job("/usr/bin/python3 " + std::string(READ_TFEVENTS) + " " + events);
  ASSERT_EQ(read.exit_code, 0) << read.output;
  EXPECT_NE(read.output.find("\"step\": 4, "), std::string::npos) << read.output;
  EXPECT_NE(read.output.find("\"train/total_loss\": "), std::string::npos) << read.output;
  EXPECT_NE(read.output.find("\"eval/segm/AP\": "), std::string::npos) << read.output;

  // `eval` on the final model gives the same AP line as the end of training.
  const std::string last = run.output.substr(run.output.rfind("eval: iter: 4"));
  const JobResult evaluated_again =
      run_job(std::string(DTRAIN_CLI) + " run -np 2 -- " + DTRAIN_MASKRCNN + " eval --threads 1 --config-file " +
                  SHAPES_CONFIG + test_set() + " MODEL.WEIGHTS " + output() + "/model_final.pth OUTPUT_DIR " +
                  dir_.path().string() + "/eval",
              240);
  ASSERT_EQ(evaluated_again.exit_code, 0) << evaluated_again.output;
  const size_t at = evaluated_again.output.find("eval: iter: 0");
  ASSERT_NE(at, std::string::npos) << evaluated_again.output;
  EXPECT_EQ(evaluated_again.output.substr(at + 13, last.find('\n') - 13), last.substr(13, last.find('\n') - 13));
}

TEST_F(TrainCli, TwoRanksWithBatchBEndWithTheWeightsOfOneRankWithBatchTwoB) {
  // Same images per step (DistributedSampler order), same per-image samples
  // and augmentation (seeded per image), losses normalised over the global
  // batch, BatchNorm statistics over the global batch (SyncBN; per-rank
  // statistics over 2 images are another model from the 4-image ones, and
  // train measurably worse: docs/performance.md): only the floating-point
  // summation order differs. In float64:
  // float32's rounding of that order flips the ranking of near-tied
  // proposals within four steps, which changes the sampled proposals and
  // the losses by 1e-3 (chaos, not a difference in the algorithm).
  const std::string settings =
      "SOLVER.MAX_ITER 10 SOLVER.IMS_PER_BATCH 4 SOLVER.LOG_PERIOD 5 SOLVER.CHECKPOINT_PERIOD 0 SOLVER.WARMUP_ITERS 2 "
      "SOLVER.BASE_LR 0.02 MODEL.RESNETS.NORM SyncBN MODEL.PRECISION float64 SOLVER.AMP.ENABLED False "
      "DATALOADER.ASPECT_RATIO_GROUPING False SEED 3";
  const JobResult two = train(settings + " OUTPUT_DIR " + dir_.path().string() + "/two", 2);
  ASSERT_EQ(two.exit_code, 0) << two.output;
  const JobResult one = train(settings + " OUTPUT_DIR " + dir_.path().string() + "/one", 1);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("4 images per step (4 per rank)"), std::string::npos) << one.output;
  EXPECT_NE(two.output.find("4 images per step (2 per rank)"), std::string::npos) << two.output;

  // Largest difference of any parameter relative to that tensor's largest
  // magnitude, and how far training moved the weights at all (so the
  // comparison is not of two untouched initialisations).
  const std::string compare =
      "import sys, torch\n"
      "a = torch.load(sys.argv[1]); b = torch.load(sys.argv[2]); c = torch.load(sys.argv[3])\n"
      "assert a.keys() == b.keys()\n"
      "rel = max(((a[k] - b[k]).abs().max() / a[k].abs().max().clamp_min(1e-12)).item() "
      "for k in a if a[k].is_floating_point() and a[k].numel())\n"
      "moved = max(((a[k] - c[k]).abs().max() / a[k].abs().max().clamp_min(1e-12)).item() "
      "for k in a if a[k].is_floating_point() and a[k].numel())\n"
      "print(f'relative difference {rel:.3g} moved {moved:.3g}')\n"
      "sys.exit(0 if rel <= 1e-4 and moved > 1e-2 else 1)\n";
  const std::string script = dir_.path().string() + "/compare.py";
  {
    std::ofstream out(script);
    out << compare;
  }
  // The untouched initialisation: a run of 0 iterations.
  const JobResult initial = train(settings + " SOLVER.MAX_ITER 0 OUTPUT_DIR " + dir_.path().string() + "/initial", 1);
  ASSERT_EQ(initial.exit_code, 0) << initial.output;
  const JobResult compared =
      run_job(std::string(DTRAIN_PYTHON) + " " + script + " " + dir_.path().string() + "/one/model_final.pth " +
              dir_.path().string() + "/two/model_final.pth " + dir_.path().string() + "/initial/model_final.pth");
  EXPECT_EQ(compared.exit_code, 0) << compared.output;
}

// Reads the value of `key` ("iter: 5/16" -> the line) from a log.
std::string line_of(const std::string& log, const std::string& start) {
  const size_t at = log.find(start);
  if (at == std::string::npos) return {};
  return log.substr(at, log.find('\n', at) - at);
}

TEST_F(TrainCli, AJobKilledWithSigkillResumesAtItsLastCheckpointWithTheSameScheduleAndEndsWithTheSameWeights) {
  const std::string settings =
      "SOLVER.MAX_ITER 16 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 1 SOLVER.CHECKPOINT_PERIOD 4 "
      "SOLVER.WARMUP_ITERS 6 SOLVER.STEPS [10,14] SOLVER.BASE_LR 0.01 SEED 9";
  // Uninterrupted reference.
  const JobResult reference = train(settings + " OUTPUT_DIR " + dir_.path().string() + "/reference");
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  // The same job, its whole process group killed with SIGKILL (a lost
  // machine) once iteration 5 has been logged, after the checkpoint at 4.
  const std::string shapes = dir_.path().string() + "/shapes";
  const std::string log = dir_.path().string() + "/killed.log";
  const std::string command = std::string(DTRAIN_CLI) + " run -np 2 -- " + DTRAIN_MASKRCNN +
                              " train --threads 1 --config-file " + SHAPES_CONFIG + " DATASETS.TRAIN_ANNOTATIONS " +
                              shapes + "/annotations/instances_train.json DATASETS.TRAIN_IMAGES " + shapes +
                              "/train INPUT.MIN_SIZE_TRAIN 96 INPUT.MAX_SIZE_TRAIN 128 OUTPUT_DIR " + output() +
                              test_set() + " " + settings;
  const std::string script = "setsid sh -c 'exec " + command + " >" + log + " 2>&1' & job=$!; " +
                             "for i in $(seq 1200); do grep -q 'iter: 5/16' " + log +
                             " 2>/dev/null && break; kill -0 $job 2>/dev/null || break; sleep 0.05; done; " +
                             "kill -KILL -$job; wait $job; exit 0";
  const std::string script_path = dir_.path().string() + "/kill.sh";
  {
    std::ofstream out(script_path);
    out << script << "\n";
  }
  const JobResult killer = run_job("sh " + script_path, 120);
  ASSERT_EQ(killer.exit_code, 0) << killer.output;
  const std::string killed = dtrain::testing::read_file(log);
  ASSERT_NE(killed.find("iter: 5/16"), std::string::npos) << killed;
  ASSERT_EQ(killed.find("iter: 16/16"), std::string::npos) << "the job finished before the kill: " << killed;
  const std::string pointer = dtrain::testing::read_file(output() + "/last_checkpoint");
  ASSERT_TRUE(pointer == "model_0000004.pth\n" || pointer == "model_0000008.pth\n") << pointer;
  const int resumed_at = std::stoi(pointer.substr(6, 7));

  const JobResult resumed = train(settings + " --resume");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("model_000000" + std::to_string(resumed_at) + ".pth at iteration " +
                                std::to_string(resumed_at)),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(line_of(resumed.output, "[0]<stdout>:iter: " + std::to_string(resumed_at) + "/16"), "")
      << "iterations before the checkpoint are not repeated";
  // Every later iteration: the same losses and learning rate as the reference.
  for (int i = resumed_at + 1; i <= 16; ++i) {
    const std::string key = "[0]<stdout>:iter: " + std::to_string(i) + "/16";
    std::string expected = line_of(reference.output, key), actual = line_of(resumed.output, key);
    ASSERT_FALSE(expected.empty());
    expected = expected.substr(0, expected.find("  images/s"));
    actual = actual.substr(0, actual.find("  images/s"));
    EXPECT_EQ(actual, expected);
  }
}

// SOLVER.ELASTIC on three loopback "hosts": a rank killed mid-run, the other two go back to the
// last commit and carry on. The global batch is the same images in any world and the losses are
// normalised over it, so (float64, SyncBN, no aspect grouping, as above) every iteration after
// the reset logs what an undisturbed two-rank run logs.
TEST_F(TrainCli, ElasticRunLosingARankGoesOnAsAnUndisturbedRun) {
  const std::string settings =
      "SOLVER.MAX_ITER 12 SOLVER.IMS_PER_BATCH 6 SOLVER.LOG_PERIOD 1 SOLVER.CHECKPOINT_PERIOD 0 SOLVER.WARMUP_ITERS 2 "
      "SOLVER.BASE_LR 0.02 MODEL.RESNETS.NORM SyncBN MODEL.PRECISION float64 SOLVER.AMP.ENABLED False "
      "DATALOADER.ASPECT_RATIO_GROUPING False SEED 3";
  const JobResult reference = train(settings + " OUTPUT_DIR " + dir_.path().string() + "/reference", 2);
  ASSERT_EQ(reference.exit_code, 0) << reference.output;

  const std::string shapes = dir_.path().string() + "/shapes";
  const std::string log = dir_.path().string() + "/elastic.log";
  const std::string command =
      "env DTRAIN_TIMEOUT_S=20 " + std::string(DTRAIN_CLI) +
      " run --min-np 2 --max-np 3 -H 127.0.0.1:1,127.0.0.2:1,127.0.0.3:1 -- " + DTRAIN_MASKRCNN +
      " train --threads 1 --config-file " + SHAPES_CONFIG + " DATASETS.TRAIN_ANNOTATIONS " + shapes +
      "/annotations/instances_train.json DATASETS.TRAIN_IMAGES " + shapes +
      "/train INPUT.MIN_SIZE_TRAIN 96 INPUT.MAX_SIZE_TRAIN 128 OUTPUT_DIR " + output() + test_set() + " " + settings +
      " SOLVER.ELASTIC.ENABLED True SOLVER.ELASTIC.COMMIT_PERIOD 2";
  // Worker 2 (found by the variable the launcher gives it) is killed once iteration 5 is logged.
  const std::string script =
      command + " >" + log + " 2>&1 & job=$!; " + "for i in $(seq 1200); do grep -q 'iter: 5/12' " + log +
      " 2>/dev/null && break; sleep 0.05; done; " + "for p in $(pgrep -f 'OUTPUT_DIR " + output() + "'); do " +
      "tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -qx DTRAIN_ELASTIC_WORKER=2 && kill -KILL $p; done; " +
      "wait $job";
  const std::string script_path = dir_.path().string() + "/elastic.sh";
  {
    std::ofstream out(script_path);
    out << script << "\n";
  }
  const JobResult elastic = run_job("sh " + script_path, 200);
  const std::string out = dtrain::testing::read_file(log);
  ASSERT_EQ(elastic.exit_code, 0) << out;
  EXPECT_NE(out.find("host 127.0.0.3: worker 2 was killed by signal 9 (SIGKILL)"), std::string::npos) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m,
                                std::regex(R"(World changed: 3 -> 2 ranks \(round 2, a worker was lost\); )"
                                           R"(resuming at iteration (\d+), redoing (\d+))")))
      << out;
  const int resumed = std::stoi(m[1]);
  EXPECT_EQ(resumed % 2, 0) << out;
  EXPECT_LE(std::stoi(m[2]), 2) << "more than one commit period redone:\n" << out;
  for (int i = 1; i <= 12; ++i) {
    const std::string key = "[0]<stdout>:iter: " + std::to_string(i) + "/12";
    std::string expected = line_of(reference.output, key);
    // After the reset: the last time the iteration was logged.
    const size_t at = out.rfind(key);
    ASSERT_NE(at, std::string::npos) << key << "\n" << out;
    std::string actual = out.substr(at, out.find('\n', at) - at);
    expected = expected.substr(0, expected.find("  images/s"));
    actual = actual.substr(0, actual.find("  images/s"));
    EXPECT_EQ(actual, expected) << "iteration " << i;
  }
  EXPECT_NE(out.find("Trained iterations 0..12"), std::string::npos) << out;
}

}  // namespace
}  // namespace dtrain::maskrcnn
