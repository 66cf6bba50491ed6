// The seeds' end-to-end test at small scale: train MNIST briefly with
// `dtrain job run`, serve the job's model.tar.gz with `dtrain serve`, send
// MNIST's 10,000 test images through POST /invocations from the client
// program, and get the trainer's own test accuracy back. Then the server
// under bad input (a fuzz-style barrage), its metrics, and SIGTERM with
// requests in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/command_runner.h"
#include "tests/apps/serve/server_process.h"
#include "tests/support/temp_dir.h"
#include "vision/data/image_codec.h"

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

class MnistServe : public ::testing::Test {
 protected:
  // One short training job for the whole suite (about 10 s on two cores).
  static void SetUpTestSuite() {
    scratch_ = new TempDir();
    const std::string jobs = (scratch_->path() / "jobs").string();
    const JobResult job = run_job(std::string(DTRAIN_CLI) + " job run " + MNIST_JOB + " --set output_path=" + jobs +
                                      " --set 'command=[\"" + DTRAIN_MNIST + "\"]'" +
                                      " --set hyperparameters.steps=60 --set hyperparameters.log-every=30" +
                                      " --work-dir " + (scratch_->path() / "work").string(),
                                  240);
    training_output_ = new std::string(job.output);
    archive_ = new std::string((fs::path(jobs) / "mnist-2x1" / "model.tar.gz").string());
    if (job.exit_code == 0) {
      const std::regex accuracy(R"(Test accuracy: ([0-9.]+))");
      std::smatch match;
      if (std::regex_search(job.output, match, accuracy)) trainer_accuracy_ = std::stod(match[1]);
    }
  }
  static void TearDownTestSuite() {
    delete scratch_;
    delete training_output_;
    delete archive_;
  }
  void SetUp() override {
    ASSERT_TRUE(fs::exists(*archive_)) << "the training job failed:\n" << *training_output_;
    ASSERT_GT(trainer_accuracy_, 0.5) << *training_output_;
  }

  static std::unique_ptr<ServerProcess> start(const std::vector<std::string>& extra,
                                              const std::string& program = DTRAIN_SERVE) {
    static int count = 0;
    std::vector<std::string> arguments;
    if (program == DTRAIN_CLI) arguments.push_back("serve");
    arguments.insert(arguments.end(), {"--model", *archive_});
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    return std::make_unique<ServerProcess>(program, arguments,
                                           (scratch_->path() / ("server" + std::to_string(count++) + ".log")).string());
  }

  static JobResult accuracy_client(int port, const std::string& arguments) {
    return run_job(std::string(MNIST_ACCURACY_CLIENT) + " --port " + std::to_string(port) + " --data-dir " +
                       MNIST_DATA + " " + arguments,
                   120);
  }

  static TempDir* scratch_;
  static std::string* training_output_;
  static std::string* archive_;
  static double trainer_accuracy_;
};

TempDir* MnistServe::scratch_ = nullptr;
std::string* MnistServe::training_output_ = nullptr;
std::string* MnistServe::archive_ = nullptr;
double MnistServe::trainer_accuracy_ = 0;

double reported_accuracy(const std::string& output) {
  const std::string last = output.substr(output.rfind('{'));
  return json::parse(last)["accuracy"].get<double>();
}

TEST_F(MnistServe, JobsModelTarGzServedThroughDtrainServeGivesTheTrainersAccuracy) {
  auto server = start({"--workers", "2"}, DTRAIN_CLI);  // `dtrain serve` execs dtrain-serve
  std::string why;
  ASSERT_TRUE(server->wait_ready(60s, why)) << why;
  EXPECT_NE(server->log().find("(mnist, unpacked into"), std::string::npos) << server->log();

  const std::string batch_labels = scratch_->path() / "batch.txt";
  const JobResult all = accuracy_client(server->port(), "--batch 500 --clients 2 --predictions " + batch_labels);
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_NE(all.output.find("of 10000 test images"), std::string::npos) << all.output;
  // The trainer prints 4 decimals; the server must agree on every image but
  // perhaps one whose two best scores tie to float rounding (batch sizes differ).
  EXPECT_NEAR(reported_accuracy(all.output), trainer_accuracy_, 1.5e-4) << all.output << *training_output_;

  // One PNG per request, as a client with a single picture sends it: the same labels.
  const std::string single_labels = scratch_->path() / "single.txt";
  const JobResult singles =
      accuracy_client(server->port(), "--batch 1 --images 300 --clients 4 --predictions " + single_labels);
  ASSERT_EQ(singles.exit_code, 0) << singles.output;
  std::istringstream batch(read_file(batch_labels)), single(read_file(single_labels));
  for (int i = 0; i < 300; ++i) {
    int a = -1, b = -2;
    batch >> a;
    single >> b;
    ASSERT_EQ(a, b) << "image " << i;
  }
  EXPECT_EQ(server->terminate(30s), std::optional<int>(0)) << server->log();
}

// Bodies a fuzzer would send: random bytes, valid inputs cut short, JSON of
// every wrong shape, wrong types. Each must get a 4xx with a JSON error, the
// server must keep answering, and its memory must not grow with the barrage.
TEST_F(MnistServe, BadInputGets4xxJsonErrorsWithoutCrashOrLeak) {
  auto server = start({"--workers", "2", "--max-payload-mb", "1", "--quiet"});
  std::string why;
  ASSERT_TRUE(server->wait_ready(60s, why)) << why;
  auto client = server->client();

  std::vector<uint8_t> digit(28 * 28);
  for (size_t i = 0; i < digit.size(); ++i) digit[i] = static_cast<uint8_t>((i * 13) % 256);
  const std::vector<uint8_t> png_bytes = vision::encode_png_channels(digit, 28, 28, 1);
  const std::string png(png_bytes.begin(), png_bytes.end());
  json rows = json::array();
  for (int y = 0; y < 28; ++y) rows.push_back(std::vector<int>(digit.begin() + y * 28, digit.begin() + y * 28 + 28));
  const std::string good_json = rows.dump();

  // Named cases first: each status the issue lists, with its message.
  struct Case {
    std::string body, type;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {png, "text/plain", 415, "unsupported content type 'text/plain'"},
      {png, "application/octet-stream", 415, "unsupported content type 'application/octet-stream'"},
      {"\x89PNG\r\n\x1a\nrubbish", "image/png", 400, "cannot decode the image"},
      {png.substr(0, png.size() - 20), "image/png", 400, "cannot decode the image"},
      {good_json.substr(0, good_json.size() / 2), "application/json", 400, "body is not valid JSON"},
      {"{\"instances\": [[1, 2, 3]]}", "application/json", 400, "JSON instances[0]: an image has 3 entries"},
      {std::string(1 << 20 | 1, '1'), "application/json", 413,
       "payload larger than the server's limit of 1048576 bytes"},
  };
  for (const Case& c : cases) {
    auto answer = client.Post("/invocations", c.body, c.type.c_str());
    ASSERT_TRUE(answer) << c.message;
    EXPECT_EQ(answer->status, c.status) << c.message << ": " << answer->body;
    const json error = json::parse(answer->body, nullptr, false);
    ASSERT_TRUE(error.is_object() && error.contains("error")) << answer->body;
    EXPECT_NE(error["error"].get<std::string>().find(c.message), std::string::npos) << answer->body;
  }

  std::mt19937 random(20261123);
  const std::vector<std::string> types = {"image/png", "image/jpeg", "application/json", "application/x-npy"};
  const auto barrage = [&](int n) {
    for (int i = 0; i < n; ++i) {
      std::string body;
      switch (random() % 4) {
        case 0:  // random bytes
          body.resize(random() % 5000);
          for (char& ch : body) ch = static_cast<char>(random());
          break;
        case 1:  // a PNG cut anywhere, or with a flipped byte
          body = png.substr(0, random() % png.size());
          if (!body.empty() && random() % 2) body[random() % body.size()] ^= static_cast<char>(1 + random() % 255);
          break;
        case 2:  // JSON cut anywhere
          body = good_json.substr(0, random() % good_json.size());
          break;
        default:  // over the limit
          body.assign((1 << 20) + 1 + random() % 100000, 'x');
      }
      const std::string& type = types[random() % types.size()];
      auto answer = client.Post("/invocations", body, type.c_str());
      ASSERT_TRUE(answer) << "no answer to a " << body.size() << "-byte " << type << " body";
      // A flipped byte can leave a PNG decodable (a changed pixel): 200 is then right.
      if (answer->status == 200) continue;
      ASSERT_GE(answer->status, 400) << answer->body;
      ASSERT_LT(answer->status, 500) << answer->body;
      const json error = json::parse(answer->body, nullptr, false);
      ASSERT_TRUE(error.is_object() && error.contains("error")) << answer->body;
    }
  };
  barrage(300);
  const long after_first = server->resident_kib();
  barrage(600);
  const long after_more = server->resident_kib();
  EXPECT_LT(after_more - after_first, 16 * 1024)
      << "resident memory grew from " << after_first << " KiB to " << after_more << " KiB over 600 bad requests";

  // Still serving, and counting what happened.
  auto good = client.Post("/invocations", png, "image/png");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 200);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("dtrain_serve_requests_total{route=\"/invocations\",code=\"415\"} "), std::string::npos);
  EXPECT_NE(metrics->body.find("dtrain_serve_requests_total{route=\"/invocations\",code=\"413\"} "), std::string::npos);
  EXPECT_NE(metrics->body.find("dtrain_serve_request_duration_seconds_count{route=\"/invocations\"} "),
            std::string::npos);
  EXPECT_EQ(server->terminate(30s), std::optional<int>(0)) << server->log();
}

TEST_F(MnistServe, SigtermFinishesRequestsInFlightAndQueued) {
  auto server = start({"--workers", "1"});
  std::string why;
  ASSERT_TRUE(server->wait_ready(60s, why)) << why;
  // Batches big enough to take a while each on one worker.
  json batch = json::array();
  std::vector<int> image(784, 0);
  for (int i = 0; i < 2000; ++i) {
    image[static_cast<size_t>(i % 784)] = 255;
    batch.push_back(image);
  }
  const std::string body = batch.dump();
  std::vector<int> statuses(3, 0);
  std::vector<size_t> answered(3, 0);
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, c] {
      auto client = server->client();
      auto answer = client.Post("/invocations", body, "application/json");
      statuses[c] = answer ? answer->status : -1;
      if (answer && answer->status == 200) answered[c] = json::parse(answer->body)["predictions"].size();
    });
  }
  // Wait until the server has all three: one running, the others queued.
  auto probe = server->client();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  bool all_in = false;
  while (!all_in && std::chrono::steady_clock::now() < deadline) {
    auto metrics = probe.Get("/metrics");
    all_in = metrics && metrics->body.find("dtrain_serve_queue_running 1\n") != std::string::npos &&
             metrics->body.find("dtrain_serve_queue_waiting 2\n") != std::string::npos;
    if (!all_in) std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(all_in) << server->log();
  const std::optional<int> code = server->terminate(60s);
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(code, std::optional<int>(0)) << server->log();
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(statuses[c], 200) << c;
    EXPECT_EQ(answered[c], 2000u) << c;
  }
  EXPECT_NE(server->log().find("SIGTERM: finishing the requests in flight"), std::string::npos) << server->log();
}

// `dtrain serve ARGUMENTS` run in `scratch`, its output captured.
auto serve_cli(const std::string& arguments, const TempDir& scratch) {
  return dtrain::testing::run_capturing(std::string(DTRAIN_CLI) + " serve " + arguments, scratch.path().string());
}

// What `dtrain serve` says about models it cannot serve and bad options.
TEST(ServeCli, OneLineErrorsAndExitCodes) {
  TempDir scratch;
  const auto run = [&](const std::string& arguments) { return serve_cli(arguments, scratch); };
  auto outcome = run("--help");
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("--max-payload-mb"), std::string::npos) << outcome.out;

  outcome = run("--model " + scratch / "missing.tar.gz");
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.err, "dtrain serve: " + scratch / "missing.tar.gz" + ": no such file or directory\n");

  outcome = run("--model " + scratch.path().string() + " --port 0");
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_EQ(outcome.err,
            "dtrain serve: " + scratch / "model.json" +
                ": missing: not a model written by a dtrain trainer (dtrain-mnist, dtrain-maskrcnn train)\n");

  // An archive that tries to write outside its directory.
  const std::string evil = scratch / "evil";
  fs::create_directories(evil + "/model");
  std::ofstream(evil + "/model/model.json") << "{}";
  ASSERT_EQ(std::system(("tar -czf " + scratch / "evil.tar.gz" + " -C " + evil + " --absolute-names model/model.json " +
                         "--transform='s,^model,../../escaped,' 2>/dev/null")
                            .c_str()),
            0);
  outcome = run("--model " + scratch / "evil.tar.gz --port 0");
  EXPECT_EQ(outcome.exit_code, 1);
  EXPECT_NE(outcome.err.find("refused: it contains '..'"), std::string::npos) << outcome.err;

  outcome = run("--workers 0");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_NE(outcome.err.find("dtrain serve: --workers"), std::string::npos) << outcome.err;
}

// --device and batching: checked by CLI11, and a GPU LibTorch cannot see
// refused before anything is loaded.
TEST(ServeCli, DeviceAndBatchOptionsAreChecked) {
  TempDir scratch;
  const auto run = [&](const std::string& arguments) { return serve_cli(arguments, scratch); };
  auto outcome = run("--help");
  EXPECT_EQ(outcome.exit_code, 0);
  for (const char* flag : {"--device", "--max-batch", "--batch-timeout-ms"}) {
    EXPECT_NE(outcome.out.find(flag), std::string::npos) << flag << "\n" << outcome.out;
  }
  for (const char* bad :
       {"--device tpu", "--max-batch 0", "--max-batch 257", "--batch-timeout-ms -1", "--batch-timeout-ms 1001"}) {
    outcome = run(std::string(bad) + " --model " + scratch / "missing");
    EXPECT_EQ(outcome.exit_code, 2) << bad << ": " << outcome.err;
    const std::string flag = std::string(bad).substr(0, std::string(bad).find(' '));
    EXPECT_EQ(outcome.err.rfind("dtrain serve: " + flag, 0), 0u) << outcome.err;
    EXPECT_EQ(std::count(outcome.err.begin(), outcome.err.end(), '\n'), 1) << outcome.err;
  }
  outcome = run("--device tpu");
  EXPECT_NE(outcome.err.find("tpu"), std::string::npos) << outcome.err;
#ifndef DTRAIN_TORCH_CUDA
  // A LibTorch without CUDA (Debian's) never sees a GPU: refused before the model is read.
  outcome = run("--device cuda --model " + scratch / "missing");
  EXPECT_EQ(outcome.exit_code, 2);
  EXPECT_EQ(outcome.err,
            "dtrain serve: --device cuda: LibTorch sees no CUDA device (a LibTorch built without CUDA, "
            "such as Debian's, never does)\n");
#endif
}

}  // namespace
}  // namespace dtrain::serve
