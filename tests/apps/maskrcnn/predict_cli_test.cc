// `dtrain-maskrcnn predict` run as a user would: the small CPU config on
// images made here, checking what lands in --output and on the terminal.
// The model is randomly initialised (or loads weights saved by a test-built
// model), so its scores are low: MODEL.ROI_HEADS.SCORE_THRESH_TEST 0.0 keeps
// every detection, which is all these tests need.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "tests/support/command_runner.h"
#include "tests/apps/maskrcnn/model_weights_file.h"
#include "tests/support/temp_dir.h"
#include "vision/data/image_codec.h"
#include "vision/data/synthetic_shapes.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::CommandOutcome;
using dtrain::testing::read_file;
using dtrain::testing::run_capturing;
using dtrain::testing::TempDir;

const std::string kKeepAll = "MODEL.ROI_HEADS.SCORE_THRESH_TEST 0.0";
const std::string kPrefix = "dtrain-maskrcnn predict: ";

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// `dtrain-maskrcnn predict` on the shapes config, on one thread (the tests
// run in parallel with each other and with builds).
CommandOutcome predict(const TempDir& scratch, const std::string& arguments) {
  const std::string command =
      std::string(DTRAIN_MASKRCNN) + " predict --config-file " + quoted(SHAPES_CONFIG) + " --threads 1 " + arguments;
  return run_capturing(command, scratch.path().string());
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// stderr without the random-initialisation warning: what a failed run said.
std::vector<std::string> error_lines(const CommandOutcome& outcome) {
  std::vector<std::string> lines;
  for (const std::string& line : lines_of(outcome.err)) {
    if (line.find("warning: no weights") == std::string::npos) lines.push_back(line);
  }
  return lines;
}

// Checks a failed run: the exit status and exactly one error line, prefixed
// with the command, that mentions each of `names`.
void expect_one_line_error(const CommandOutcome& outcome, int exit_code, const std::vector<std::string>& names) {
  EXPECT_EQ(outcome.exit_code, exit_code) << outcome.err;
  const std::vector<std::string> lines = error_lines(outcome);
  ASSERT_EQ(lines.size(), 1u) << outcome.err;
  EXPECT_EQ(lines[0].rfind(kPrefix, 0), 0u) << lines[0];
  for (const std::string& name : names) EXPECT_NE(lines[0].find(name), std::string::npos) << lines[0];
}

vision::RgbImage write_shapes_png(const std::string& path, uint32_t height, uint32_t width, uint64_t seed) {
  vision::RgbImage image = vision::generate_shapes_image(height, width, seed).image;
  vision::write_file_bytes(path, vision::encode_png(image));
  return image;
}

nlohmann::json read_json(const std::string& path) {
  const std::string text = read_file(path);
  EXPECT_FALSE(text.empty()) << path;
  return nlohmann::json::parse(text);
}

// Checks one image's results file and returns each result's mask,
// column-major as COCO decodes it.
std::vector<std::vector<uint8_t>> check_results(const nlohmann::json& results, int64_t image_id, uint32_t height,
                                                uint32_t width) {
  std::vector<std::vector<uint8_t>> masks;
  EXPECT_TRUE(results.is_array());
  EXPECT_FALSE(results.empty()) << "score threshold 0 should keep detections";
  double previous_score = 1.0;
  for (const nlohmann::json& r : results) {
    EXPECT_EQ(r.at("image_id").get<int64_t>(), image_id);
    const int64_t category = r.at("category_id").get<int64_t>();
    EXPECT_GE(category, 1);  // the shapes config: square, circle, triangle
    EXPECT_LE(category, 3);
    const double score = r.at("score").get<double>();
    EXPECT_GE(score, 0.0);
    EXPECT_LE(score, previous_score);
    previous_score = score;
    const auto box = r.at("bbox").get<std::vector<double>>();
    EXPECT_EQ(box.size(), 4u);
    EXPECT_GE(box[0], 0.0);
    EXPECT_GE(box[1], 0.0);
    EXPECT_GE(box[2], 0.0);
    EXPECT_GE(box[3], 0.0);
    EXPECT_LE(box[0] + box[2], width + 1e-3);
    EXPECT_LE(box[1] + box[3], height + 1e-3);
    const nlohmann::json& segmentation = r.at("segmentation");
    EXPECT_EQ(segmentation.at("size"), nlohmann::json::array({height, width}));
    const vision::RunLengthMask rle =
        vision::rle_from_counts_string(segmentation.at("counts").get<std::string>(), height, width);
    std::vector<uint8_t> mask = vision::rle_decode(rle);
    EXPECT_EQ(mask.size(), size_t{height} * width);
    masks.push_back(std::move(mask));
  }
  return masks;
}

// The drawing changes the image where masks are and nowhere outside the
// masks and boxes.
void check_visualization(const std::string& png, const vision::RgbImage& input, const nlohmann::json& results,
                         const std::vector<std::vector<uint8_t>>& masks) {
  const vision::RgbImage drawn = vision::read_image(png);
  ASSERT_EQ(drawn.height, input.height);
  ASSERT_EQ(drawn.width, input.width);
  std::vector<uint8_t> in_mask(size_t{input.height} * input.width, 0), near_box(in_mask.size(), 0);
  for (const auto& mask : masks) {
    for (uint32_t x = 0; x < input.width; ++x) {
      for (uint32_t y = 0; y < input.height; ++y)
        in_mask[size_t{y} * input.width + x] |= mask[size_t{x} * input.height + y];
    }
  }
  for (const nlohmann::json& r : results) {
    const auto b = r.at("bbox").get<std::vector<double>>();
    for (uint32_t y = 0; y < input.height; ++y) {
      for (uint32_t x = 0; x < input.width; ++x) {
        if (x + 1 >= b[0] && x <= b[0] + b[2] + 1 && y + 1 >= b[1] && y <= b[1] + b[3] + 1) {
          near_box[size_t{y} * input.width + x] = 1;
        }
      }
    }
  }
  size_t masked = 0, masked_changed = 0, untouched_changed = 0;
  for (uint32_t y = 0; y < input.height; ++y) {
    for (uint32_t x = 0; x < input.width; ++x) {
      const size_t i = size_t{y} * input.width + x;
      const bool changed = !std::equal(input.at(y, x), input.at(y, x) + 3, drawn.at(y, x));
      if (in_mask[i]) {
        ++masked;
        masked_changed += changed;
      } else if (!near_box[i]) {
        untouched_changed += changed;
      }
    }
  }
  EXPECT_GT(masked, 0u);
  // Blending can leave a pixel whose colour is already the overlay's as it was.
  EXPECT_GT(masked_changed, masked * 9 / 10) << masked_changed << " of " << masked;
  EXPECT_EQ(untouched_changed, 0u);
}

TEST(MaskRcnnPredict, WritesCocoResultsAndDrawingsForEveryImageOfADirectory) {
  TempDir dir, out, scratch;
  // Not square, so a swapped height and width shows; one COCO-style name
  // (id from the number), one other name (id from the sorted position), a
  // JPEG, and a file that is not an image, left alone.
  const vision::RgbImage coco = write_shapes_png(dir / "000000000042.png", 96, 128, 1);
  const vision::RgbImage shapes = vision::generate_shapes_image(112, 80, 2).image;
  vision::write_file_bytes(dir / "scene.jpg", vision::encode_jpeg(shapes, 95));
  const vision::RgbImage scene = vision::read_image(dir / "scene.jpg");
  vision::write_file_bytes(dir / "notes.txt", std::vector<uint8_t>{'h', 'i'});

  const CommandOutcome run = predict(scratch, "--input " + quoted(dir.path().string()) + " --output " +
                                                  quoted(out / "new") + " --visualize " + kKeepAll);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> warnings = lines_of(run.err);
  ASSERT_EQ(warnings.size(), 1u) << run.err;
  EXPECT_NE(warnings[0].find("random initialisation"), std::string::npos) << run.err;

  std::vector<std::string> written;
  for (const auto& entry : fs::directory_iterator(out / "new")) written.push_back(entry.path().filename().string());
  std::sort(written.begin(), written.end());
  EXPECT_EQ(written, (std::vector<std::string>{"000000000042.json", "000000000042.png", "scene.json", "scene.png"}));

  const nlohmann::json coco_results = read_json(out / "new/000000000042.json");
  const auto coco_masks = check_results(coco_results, 42, 96, 128);
  check_visualization(out / "new/000000000042.png", coco, coco_results, coco_masks);
  const nlohmann::json scene_results = read_json(out / "new/scene.json");
  const auto scene_masks = check_results(scene_results, 1, 112, 80);
  check_visualization(out / "new/scene.png", scene, scene_results, scene_masks);

  // One line per image, in sorted order, agreeing with the files.
  const std::vector<std::string> summary = lines_of(run.out);
  ASSERT_EQ(summary.size(), 2u) << run.out;
  const std::regex line(R"((.+): (\d+) detections \(best: category (\d+) score ([0-9.]+)\))");
  const nlohmann::json* results[] = {&coco_results, &scene_results};
  const std::string names[] = {"000000000042.png", "scene.jpg"};
  for (size_t i = 0; i < 2; ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(summary[i], m, line)) << summary[i];
    EXPECT_EQ(fs::path(m[1].str()).filename(), names[i]);
    EXPECT_EQ(std::stoul(m[2].str()), results[i]->size());
    EXPECT_EQ(std::stoll(m[3].str()), (*results[i])[0].at("category_id").get<int64_t>());
    EXPECT_NEAR(std::stod(m[4].str()), (*results[i])[0].at("score").get<double>(), 5e-4);
  }
}

TEST(MaskRcnnPredict, LoadsWeightsFromTheFlagOrTheConfigAndRepeatsItself) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "cat.png", 100, 90, 3);
  const std::string weights = dir / "model_final.pth";
  testing::save_model_weights(SHAPES_CONFIG, {}, 7, weights);

  const std::string input = " --input " + quoted(dir / "cat.png") + " " + kKeepAll;
  const CommandOutcome first =
      predict(scratch, "--weights " + quoted(weights) + " --output " + quoted(out / "a") + input);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.err.find("warning"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find(weights), std::string::npos) << first.err;
  const CommandOutcome second =
      predict(scratch, "--output " + quoted(out / "b") + input + " MODEL.WEIGHTS " + quoted(weights));
  ASSERT_EQ(second.exit_code, 0) << second.err;

  const std::string a = read_file(out / "a/cat.json"), b = read_file(out / "b/cat.json");
  check_results(nlohmann::json::parse(a), 0, 100, 90);  // a single file is image 0
  EXPECT_EQ(a, b);
  EXPECT_EQ(lines_of(first.out), lines_of(second.out));
  EXPECT_FALSE(fs::exists(out / "a/cat.png"));  // no --visualize, no drawing
}

TEST(MaskRcnnPredict, RefusesWeightsOfAnotherArchitectureNamingTheFile) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "1.png", 64, 64, 4);
  const std::string thin = dir / "fpn32.pth";
  testing::save_model_weights(SHAPES_CONFIG, {"MODEL.FPN.OUT_CHANNELS", "32"}, 0, thin);
  const CommandOutcome run = predict(scratch, "--weights " + quoted(thin) + " --input " + quoted(dir / "1.png") +
                                                  " --output " + quoted(out.path().string()));
  expect_one_line_error(run, 1, {thin, "not weights of this model"});
  EXPECT_FALSE(fs::exists(out / "1.json"));
}

TEST(MaskRcnnPredict, RefusesWeightsTrainedForAnotherNumberOfClasses) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "1.png", 64, 64, 4);
  const std::string five = dir / "five_classes.pth";
  testing::save_model_weights(SHAPES_CONFIG, {"MODEL.ROI_HEADS.NUM_CLASSES", "5"}, 0, five);
  const CommandOutcome run = predict(scratch, "--weights " + quoted(five) + " --input " + quoted(dir / "1.png") +
                                                  " --output " + quoted(out.path().string()));
  expect_one_line_error(run, 1, {five, "NUM_CLASSES 4"});
}

TEST(MaskRcnnPredict, MissingWeightsFileIsARuntimeError) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "1.png", 64, 64, 4);
  const CommandOutcome run = predict(scratch, "--weights " + quoted(dir / "nope.pth") + " --input " +
                                                  quoted(dir / "1.png") + " --output " + quoted(out.path().string()));
  expect_one_line_error(run, 1, {dir / "nope.pth"});
}

TEST(MaskRcnnPredict, AFileThatIsNotAnImageIsNamed) {
  TempDir dir, out, scratch;
  vision::write_file_bytes(dir / "readme.txt", std::vector<uint8_t>{'n', 'o', 't', '\n'});
  const CommandOutcome run =
      predict(scratch, "--input " + quoted(dir / "readme.txt") + " --output " + quoted(out.path().string()));
  expect_one_line_error(run, 1, {dir / "readme.txt", "not a JPEG or PNG"});
}

TEST(MaskRcnnPredict, AnUndecodableImageInADirectoryStopsTheRunNamingIt) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "a_good.png", 64, 64, 5);
  std::vector<uint8_t> truncated = vision::encode_jpeg(vision::generate_shapes_image(64, 64, 6).image);
  truncated.resize(40);
  vision::write_file_bytes(dir / "b_broken.jpg", truncated);
  const CommandOutcome run = predict(
      scratch, "--input " + quoted(dir.path().string()) + " --output " + quoted(out.path().string()) + " " + kKeepAll);
  expect_one_line_error(run, 1, {"b_broken.jpg"});
  EXPECT_TRUE(fs::exists(out / "a_good.json"));  // the images before it are done
  EXPECT_FALSE(fs::exists(out / "b_broken.json"));
}

TEST(MaskRcnnPredict, UsageErrorsExitWithTwoAndOneLine) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "1.png", 64, 64, 4);
  const std::string input = " --input " + quoted(dir / "1.png") + " --output " + quoted(out.path().string());

  expect_one_line_error(
      predict(scratch, "--input " + quoted(dir / "missing.png") + " --output " + quoted(out.path().string())), 2,
      {dir / "missing.png", "no such file"});
  TempDir empty;
  expect_one_line_error(
      predict(scratch, "--input " + quoted(empty.path().string()) + " --output " + quoted(out.path().string())), 2,
      {empty.path().string(), "no *.jpg"});
  expect_one_line_error(predict(scratch, input + " MODEL.ROI_HEADS.SCORE_THRESH 0.5"), 2,
                        {"MODEL.ROI_HEADS.SCORE_THRESH"});
  expect_one_line_error(predict(scratch, input + " MODEL.ROI_HEADS.SCORE_THRESH_TEST"), 2,
                        {"MODEL.ROI_HEADS.SCORE_THRESH_TEST"});
  expect_one_line_error(predict(scratch, "--input " + quoted(dir / "1.png")), 2, {"--output"});
  expect_one_line_error(predict(scratch, input + " --no-such-flag"), 2, {"--no-such-flag"});
  // Drawings next to the inputs would replace 1.png.
  expect_one_line_error(predict(scratch, "--input " + quoted(dir.path().string()) + " --output " +
                                             quoted(dir.path().string()) + " --visualize"),
                        2, {"overwrite", "1.png"});
  EXPECT_EQ(read_file(dir / "1.png").substr(1, 3), "PNG");
  TempDir config_dir;
  const std::string bad_config = config_dir / "bad.yaml";
  vision::write_file_bytes(bad_config, std::vector<uint8_t>{'F', 'O', 'O', ':', ' ', '1', '\n'});
  expect_one_line_error(
      run_capturing(std::string(DTRAIN_MASKRCNN) + " predict --config-file " + quoted(bad_config) + input,
                    scratch.path().string()),
      2, {"FOO", bad_config});
}

TEST(MaskRcnnPredict, ModelDeviceIsTheCpuOrAGpuLibTorchSees) {
  TempDir dir, out, scratch;
  write_shapes_png(dir / "1.png", 64, 64, 4);
  const std::string input = " --input " + quoted(dir / "1.png") + " --output " + quoted(out.path().string());
  expect_one_line_error(predict(scratch, input + " MODEL.DEVICE tpu"), 2,
                        {"MODEL.DEVICE must be cpu or cuda, got 'tpu'"});
  if (!torch::cuda::is_available()) {
    // Debian's LibTorch has no CUDA: refused before any work, naming the key.
    expect_one_line_error(predict(scratch, input + " MODEL.DEVICE cuda"), 2,
                          {"MODEL.DEVICE cuda: LibTorch sees no CUDA device (a LibTorch built without CUDA, such as "
                           "Debian's, never does)"});
    EXPECT_FALSE(fs::exists(out / "1.json"));
  }
  const CommandOutcome on_cpu = predict(scratch, input + " MODEL.DEVICE cpu");
  EXPECT_EQ(on_cpu.exit_code, 0) << on_cpu.err;
  EXPECT_TRUE(fs::exists(out / "1.json"));
}

}  // namespace
}  // namespace dtrain::maskrcnn
