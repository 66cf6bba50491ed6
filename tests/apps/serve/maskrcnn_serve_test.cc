// Mask R-CNN from training to serving: `dtrain-maskrcnn train` in a job's
// model directory (SM_MODEL_DIR) writes model.json and config.yaml beside the
// weights; `dtrain serve` loads the packed directory and answers JPEG, PNG
// and base64 JSON requests with detections named by the training set's
// categories. A two-iteration model finds nothing real, so the test trains
// with MODEL.ROI_HEADS.SCORE_THRESH_TEST 0 (kept in config.yaml): every
// candidate comes back, which is what checking the format needs.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/command_runner.h"
#include "serving/base64.h"
#include "tests/apps/serve/same_detections.h"
#include "tests/apps/serve/server_process.h"
#include "tests/support/temp_dir.h"
#include "vision/data/image_codec.h"
#include "vision/coco/rle_string.h"

namespace dtrain::serve {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::JobResult;
using dtrain::testing::read_file;
using dtrain::testing::run_job;
using dtrain::testing::TempDir;
using nlohmann::json;
using testing::ServerProcess;
using namespace std::chrono_literals;

class MaskRcnnServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new TempDir();
    const std::string root = scratch_->path().string();
    output_ = new std::string();
    JobResult made = run_job(std::string(DTRAIN_CLI) + " data make-shapes --out " + root +
                             "/shapes --train 4 --val 2 --size 96 --seed 5 --threads 1");
    *output_ += made.output;
    if (made.exit_code != 0) return;
    const JobResult trained = run_job(
        "env SM_MODEL_DIR=" + root + "/model " + DTRAIN_CLI + " run -np 1 -- " + DTRAIN_MASKRCNN +
            " train --threads 1 --config-file " + SHAPES_CONFIG + " DATASETS.TRAIN_ANNOTATIONS " + root +
            "/shapes/annotations/instances_train.json DATASETS.TRAIN_IMAGES " + root +
            "/shapes/train DATASETS.TEST_ANNOTATIONS '' DATASETS.TEST_IMAGES '' INPUT.MIN_SIZE_TRAIN 96 "
            "INPUT.MAX_SIZE_TRAIN 128 INPUT.MIN_SIZE_TEST 96 INPUT.MAX_SIZE_TEST 128 SOLVER.MAX_ITER 2 "
            "SOLVER.IMS_PER_BATCH 2 SOLVER.WARMUP_ITERS 1 SOLVER.BASE_LR 0.001 MODEL.ROI_HEADS.SCORE_THRESH_TEST 0.0 "
            "OUTPUT_DIR " +
            root + "/out",
        240);
    *output_ += trained.output;
    if (trained.exit_code != 0) return;
    trained_ = std::system(("tar -czf " + root + "/model.tar.gz -C " + root + "/model .").c_str()) == 0;
  }
  static void TearDownTestSuite() {
    delete scratch_;
    delete output_;
  }
  void SetUp() override { ASSERT_TRUE(trained_) << *output_; }

  static std::string path(const std::string& name) { return (scratch_->path() / name).string(); }

  static TempDir* scratch_;
  static std::string* output_;
  static bool trained_;
};

TempDir* MaskRcnnServe::scratch_ = nullptr;
std::string* MaskRcnnServe::output_ = nullptr;
bool MaskRcnnServe::trained_ = false;

TEST_F(MaskRcnnServe, TrainerWritesMetadataForServing) {
  const json meta = json::parse(read_file(path("model/model.json")));
  EXPECT_EQ(meta["kind"], "maskrcnn");
  EXPECT_EQ(meta["weights"], "model_final.pth");
  EXPECT_EQ(meta["config"], "config.yaml");
  EXPECT_EQ(meta["categories"], json::parse(R"([{"id": 1, "name": "square"}, {"id": 2, "name": "circle"},
                                                {"id": 3, "name": "triangle"}])"));
  const std::string config = read_file(path("model/config.yaml"));
  EXPECT_NE(config.find("DEPTH: 18"), std::string::npos) << config;
  EXPECT_NE(config.find("SCORE_THRESH_TEST: 0"), std::string::npos) << config;
}

TEST_F(MaskRcnnServe, ImagesAsJpegPngAndBase64JsonGetCocoDetections) {
  ServerProcess server(DTRAIN_SERVE, {"--model", path("model.tar.gz"), "--workers", "1", "--threads", "1"},
                       path("server.log"));
  std::string why;
  ASSERT_TRUE(server.wait_ready(120s, why)) << why;
  auto client = server.client();

  const std::vector<uint8_t> png_bytes = vision::read_file_bytes(path("shapes/val/000000000001.png"));
  const std::string png(png_bytes.begin(), png_bytes.end());
  const vision::RgbImage image = vision::decode_image(png_bytes, "val image");
  const std::vector<uint8_t> jpeg_bytes = vision::encode_jpeg(image, 95);

  auto from_png = client.Post("/invocations", png, "image/png");
  ASSERT_TRUE(from_png);
  ASSERT_EQ(from_png->status, 200) << from_png->body;
  const json detections = json::parse(from_png->body);
  EXPECT_EQ(detections["width"], image.width);
  EXPECT_EQ(detections["height"], image.height);
  ASSERT_GT(detections["detections"].size(), 0u) << from_png->body;
  const std::map<std::string, int> ids = {{"square", 1}, {"circle", 2}, {"triangle", 3}};
  double previous = 2;
  for (const json& d : detections["detections"]) {
    const auto id = ids.find(d["category_name"].get<std::string>());
    ASSERT_NE(id, ids.end()) << d;
    EXPECT_EQ(d["category_id"].get<int>(), id->second) << d;
    EXPECT_LE(d["score"].get<double>(), previous);
    previous = d["score"].get<double>();
    ASSERT_EQ(d["bbox"].size(), 4u);
    EXPECT_GE(d["bbox"][2].get<double>(), 0);
    EXPECT_EQ(d["segmentation"]["size"], json::array({image.height, image.width}));
    const vision::RunLengthMask rle =
        vision::rle_from_counts_string(d["segmentation"]["counts"].get<std::string>(), image.height, image.width);
    uint64_t total = 0;
    for (uint32_t run : rle.counts) total += run;
    EXPECT_EQ(total, uint64_t{image.height} * image.width);
  }

  // The same image as base64 JSON: the same answer, byte for byte.
  const json wrapped = {{"image", serving::encode_base64(png_bytes.data(), png_bytes.size())}};
  auto from_json = client.Post("/invocations", wrapped.dump(), "application/json");
  ASSERT_TRUE(from_json);
  EXPECT_EQ(from_json->status, 200);
  EXPECT_EQ(from_json->body, from_png->body);

  auto from_jpeg = client.Post("/invocations", std::string(jpeg_bytes.begin(), jpeg_bytes.end()), "image/jpeg");
  ASSERT_TRUE(from_jpeg);
  EXPECT_EQ(from_jpeg->status, 200) << from_jpeg->body;

  // A threshold keeps only the detections at or above it, from the query or the SageMaker header.
  const double median = detections["detections"][detections["detections"].size() / 2]["score"].get<double>();
  auto above = client.Post("/invocations?score_threshold=" + std::to_string(median + 1e-7), png, "image/png");
  ASSERT_TRUE(above);
  ASSERT_EQ(above->status, 200);
  for (const json& d : json::parse(above->body)["detections"]) EXPECT_GE(d["score"].get<double>(), median);
  EXPECT_LT(json::parse(above->body)["detections"].size(), detections["detections"].size());
  auto none = client.Post("/invocations", httplib::Headers{{"X-Amzn-SageMaker-Custom-Attributes", "score_threshold=1"}},
                          png, "image/png");
  ASSERT_TRUE(none);
  EXPECT_EQ(json::parse(none->body)["detections"].size(), 0u);

  // Bad input: each a 4xx with a JSON error naming it.
  std::string huge = png;  // IHDR claims 40000 x 40000: refused from the header, never decoded
  for (int at : {16, 20}) {
    huge[at] = 0, huge[at + 1] = 0, huge[at + 2] = static_cast<char>(0x9c), huge[at + 3] = 0x40;
  }
  const std::vector<std::tuple<std::string, std::string, int, std::string>> bad = {
      {huge, "image/png", 413, "image is 40000x40000 = 1600000000 pixels"},
      {png.substr(0, png.size() / 3), "image/png", 400, "cannot decode the image"},
      {std::string(jpeg_bytes.begin(), jpeg_bytes.begin() + 200), "image/jpeg", 400, "cannot decode the image"},
      {R"({"image": "not base64!"})", "application/json", 400, "\"image\": base64: unexpected ' '"},
      {png, "image/gif", 415, "unsupported content type 'image/gif'"},
  };
  for (const auto& [body, type, status, message] : bad) {
    auto answer = client.Post("/invocations", body, type.c_str());
    ASSERT_TRUE(answer) << message;
    EXPECT_EQ(answer->status, status) << answer->body;
    EXPECT_NE(json::parse(answer->body)["error"].get<std::string>().find(message), std::string::npos) << answer->body;
  }
  auto ping = client.Get("/ping");
  ASSERT_TRUE(ping);
  EXPECT_EQ(ping->status, 200);
  EXPECT_EQ(server.terminate(60s), std::optional<int>(0)) << server.log();
}

// A server that batches, under concurrent requests: each gets its own
// answer (what it gets alone, up to float rounding) or its own error,
// however the requests happened to be grouped.
TEST_F(MaskRcnnServe, BatchedConcurrentRequestsGetTheirOwnAnswers) {
  ServerProcess server(
      DTRAIN_SERVE,
      {"--model", path("model"), "--workers", "1", "--threads", "1", "--max-batch", "4", "--batch-timeout-ms", "20"},
      path("batching-server.log"));
  std::string why;
  ASSERT_TRUE(server.wait_ready(120s, why)) << why;
  std::vector<std::string> images, alone;
  for (const char* name : {"000000000001.png", "000000000002.png"}) {
    const std::vector<uint8_t> bytes = vision::read_file_bytes(path(std::string("shapes/val/") + name));
    images.emplace_back(bytes.begin(), bytes.end());
    auto answer = server.client().Post("/invocations", images.back(), "image/png");
    ASSERT_TRUE(answer);
    ASSERT_EQ(answer->status, 200) << answer->body;
    alone.push_back(answer->body);
  }
  const std::string broken = images[0].substr(0, images[0].size() / 3);

  constexpr int kClients = 4, kRounds = 3;
  std::vector<std::vector<std::pair<int, std::string>>> answers(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = server.client();
      for (int round = 0; round < kRounds; ++round) {
        for (const std::string* body : std::vector<const std::string*>{&images[0], &broken, &images[1]}) {
          auto answer = client.Post("/invocations", *body, "image/png");
          answers[c].emplace_back(answer ? answer->status : -1, answer ? answer->body : "");
        }
      }
    });
  }
  for (std::thread& client : clients) client.join();
  for (int c = 0; c < kClients; ++c) {
    ASSERT_EQ(answers[c].size(), 3u * kRounds);
    for (int round = 0; round < kRounds; ++round) {
      SCOPED_TRACE("client " + std::to_string(c) + " round " + std::to_string(round));
      const auto& first = answers[c][3 * round];
      const auto& bad = answers[c][3 * round + 1];
      const auto& second = answers[c][3 * round + 2];
      ASSERT_EQ(first.first, 200) << first.second;
      testing::expect_same_detections(first.second, alone[0]);
      EXPECT_EQ(bad.first, 400) << bad.second;
      EXPECT_NE(bad.second.find("cannot decode the image"), std::string::npos) << bad.second;
      ASSERT_EQ(second.first, 200) << second.second;
      testing::expect_same_detections(second.second, alone[1]);
    }
  }
  auto metrics = server.client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("dtrain_serve_max_batch 4\n"), std::string::npos) << metrics->body;
  EXPECT_EQ(server.terminate(60s), std::optional<int>(0)) << server.log();
}

}  // namespace
}  // namespace dtrain::serve
