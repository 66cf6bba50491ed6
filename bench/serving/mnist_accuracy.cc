// dtrain-serve-mnist-accuracy: the seeds' end-to-end check of a deployed MNIST
// model. Sends MNIST's test images to a running `dtrain serve` through POST
// /invocations, one PNG per request (--batch 1, as a client with one picture
// would) or as JSON batches, and reports the accuracy of the answers:
//
//   dtrain-serve-mnist-accuracy --port 8080 --data-dir data/mnist
//   Accuracy via the server: 0.9874 (9874 of 10000 test images, 10000 requests, 4 clients, 9.8 s)
//   {"images": 10000, "correct": 9874, "accuracy": 0.9874, "requests": 10000, "seconds": 9.8}
//
// --predictions FILE writes the predicted label of each image, one a line.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "mnist/mnist_idx.h"
#include "vision/data/image_codec.h"

namespace {

using nlohmann::json;

struct Options {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string data_dir = "data/mnist";
  size_t images = 10000;
  size_t batch = 1;
  int clients = 4;
  std::string predictions_file;
};

// One request: images [begin, end) as a PNG (one image) or a JSON batch.
std::pair<std::string, std::string> request_body(const dtrain::mnist::MnistImages& images, size_t begin, size_t end,
                                                 bool png) {
  const size_t pixels = images.rows * images.cols;
  if (png) {
    const std::vector<uint8_t> encoded =
        dtrain::vision::encode_png_channels(std::span<const uint8_t>(images.pixels.data() + begin * pixels, pixels),
                                            static_cast<uint32_t>(images.rows), static_cast<uint32_t>(images.cols), 1);
    return {std::string(encoded.begin(), encoded.end()), "image/png"};
  }
  json batch = json::array();
  for (size_t i = begin; i < end; ++i) {
    batch.push_back(std::vector<int>(images.pixels.begin() + static_cast<long>(i * pixels),
                                     images.pixels.begin() + static_cast<long>((i + 1) * pixels)));
  }
  return {batch.dump(), "application/json"};
}

int run(const Options& options) {
  const dtrain::mnist::MnistSplit test = dtrain::mnist::read_mnist_split(options.data_dir, "t10k");
  const size_t count = std::min(options.images, test.images.count);
  std::vector<int> predicted(count, -1);
  std::atomic<size_t> next{0};
  std::atomic<size_t> requests{0};
  std::mutex error_mutex;
  std::string first_error;
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < options.clients; ++c) {
    clients.emplace_back([&] {
      httplib::Client client(options.host, options.port);
      client.set_read_timeout(120, 0);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);  // no 40 ms Nagle / delayed-ACK stalls
      for (;;) {
        const size_t begin = next.fetch_add(options.batch);
        if (begin >= count) return;
        const size_t end = std::min(count, begin + options.batch);
        const auto [body, type] = request_body(test.images, begin, end, options.batch == 1);
        const auto answer = client.Post("/invocations", body, type);
        ++requests;
        std::string error;
        if (!answer) {
          error = "no answer: " + httplib::to_string(answer.error());
        } else if (answer->status != 200) {
          error = "HTTP " + std::to_string(answer->status) + ": " + answer->body;
        } else {
          const json parsed = json::parse(answer->body, nullptr, false);
          if (parsed.is_discarded() || !parsed.contains("predictions") || parsed["predictions"].size() != end - begin) {
            error = "unexpected answer: " + answer->body.substr(0, 200);
          } else {
            for (size_t i = begin; i < end; ++i) predicted[i] = parsed["predictions"][i - begin]["label"].get<int>();
          }
        }
        if (!error.empty()) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (first_error.empty()) first_error = "images " + std::to_string(begin) + "..: " + error;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!first_error.empty()) {
    std::fprintf(stderr, "dtrain-serve-mnist-accuracy: %s\n", first_error.c_str());
    return 1;
  }
  size_t correct = 0;
  for (size_t i = 0; i < count; ++i) correct += predicted[i] == test.labels[i];
  if (!options.predictions_file.empty()) {
    std::ofstream out(options.predictions_file);
    for (int label : predicted) out << label << "\n";
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(count);
  std::printf("Accuracy via the server: %.4f (%zu of %zu test images, %zu requests, %d clients, %.1f s)\n", accuracy,
              correct, count, requests.load(), options.clients, seconds);
  std::printf("%s\n", json{{"images", count},
                           {"correct", correct},
                           {"accuracy", accuracy},
                           {"requests", requests.load()},
                           {"seconds", seconds}}
                          .dump()
                          .c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"dtrain-serve-mnist-accuracy: MNIST's test images through a running dtrain serve"};
  app.add_option("--host", options.host)->capture_default_str();
  app.add_option("--port", options.port)->required();
  app.add_option("--data-dir", options.data_dir, "Directory with t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte")
      ->capture_default_str();
  app.add_option("--images", options.images, "How many test images, from the first")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", options.batch, "Images per request: 1 sends a PNG, more a JSON batch")
      ->check(CLI::Range(1, 5000))
      ->capture_default_str();
  app.add_option("--clients", options.clients, "Concurrent connections")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--predictions", options.predictions_file, "Write each image's predicted label, one a line");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-serve-mnist-accuracy: %s\n", e.what());
    return 1;
  }
}
