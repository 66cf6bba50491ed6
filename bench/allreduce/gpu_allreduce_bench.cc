// dtrain-bench-gpu: allreduce of CUDA tensors (float32, 4 KiB to 256 MiB) through each of the
// runtime's GPU engines, measured in one run on the same ranks against NCCL called directly
// (the peer: what PyTorch's ProcessGroupNCCL calls) and against the runtime on host memory;
// then ResNet-50's 161 gradient tensors on the GPU, fused by the runtime, against one
// allreduce of the same bytes. The runtime is started once per engine (DTRAIN_GPU_ENGINE is
// read at init).
//
//   dtrain run -np 2 -- build/apps/dtrain-bench-gpu [--max-bytes N] [--json FILE]
//
// Each rank uses cuda:(local_rank % GPUs). Several ranks on one GPU need NCCL_HOSTID set per
// rank for NCCL (scripts/gpu/bench does this).
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "bench/allreduce/resnet50_gradients.h"
#include "dtrain/dtrain.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::size_t max_bytes = 256u << 20;
  std::string json;
};

void check(cudaError_t result, const char* call) {
  if (result != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(result));
}

void check(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(result));
}

// Iterations for a size: about 1 GiB moved per measurement, between 5 and 500. Every rank
// computes the same count, so the timed loops need no agreement.
int iterations_for(std::size_t bytes) { return static_cast<int>(std::clamp<std::size_t>((1u << 30) / bytes, 5, 500)); }

// Seconds per call of `op` (which queues work on `stream`), the slowest rank's view.
double time_per_op(const std::function<void()>& op, int iterations, cudaStream_t stream) {
  for (int i = 0; i < 2; ++i) op();  // warm up: communicators, buffers
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  dtrain::barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) op();
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  double per_op = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  dtrain::allreduce("bench.slowest", {&per_op, dtrain::DataType::kFloat64, {1}},
                    {&per_op, dtrain::DataType::kFloat64, {1}}, {dtrain::ReduceOp::kMax});
  return per_op;
}

struct Gpu {
  int device = 0;
  cudaStream_t stream = nullptr;
  float* buffer = nullptr;
  std::size_t bytes = 0;
};

dtrain::TensorView cuda_view(const Gpu& gpu, void* data, std::vector<std::int64_t> shape) {
  dtrain::TensorView view{data, dtrain::DataType::kFloat32, std::move(shape)};
  view.device = {dtrain::DeviceType::kCUDA, gpu.device};
  view.cuda_stream = gpu.stream;
  return view;
}

std::string human_bytes(std::size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes >> 10) + " KiB";
}

std::vector<std::size_t> sizes(const Options& options) {
  std::vector<std::size_t> out;
  for (std::size_t bytes = 4096; bytes <= options.max_bytes; bytes *= 4) out.push_back(bytes);
  return out;
}

// Per size: seconds per allreduce through the runtime with `engine` on the GPU buffer.
std::vector<double> measure_engine(const Gpu& gpu, const Options& options, const char* engine) {
  setenv("DTRAIN_GPU_ENGINE", engine, 1);
  dtrain::init();
  std::vector<double> times;
  for (std::size_t bytes : sizes(options)) {
    const auto view = cuda_view(gpu, gpu.buffer, {static_cast<std::int64_t>(bytes / 4)});
    times.push_back(time_per_op([&] { dtrain::allreduce("bench.gpu", view, view, {dtrain::ReduceOp::kSum}); },
                                iterations_for(bytes), gpu.stream));
  }
  dtrain::shutdown();
  return times;
}

}  // namespace

int run(const Options& options) {
  Gpu gpu;
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  const char* local = std::getenv("DTRAIN_LOCAL_RANK");
  gpu.device = (local ? std::atoi(local) : 0) % count;
  check(cudaSetDevice(gpu.device), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&gpu.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  gpu.bytes = options.max_bytes;
  check(cudaMalloc(&gpu.buffer, gpu.bytes), "cudaMalloc");
  check(cudaMemset(gpu.buffer, 0, gpu.bytes), "cudaMemset");

  const std::vector<double> t_nccl_engine = measure_engine(gpu, options, "nccl");
  const std::vector<double> t_staged = measure_engine(gpu, options, "staged");

  // NCCL called directly, and the runtime on host memory, with the runtime up for the timing.
  setenv("DTRAIN_GPU_ENGINE", "auto", 1);
  dtrain::init();
  const int rank = dtrain::rank(), n = dtrain::size();
  struct {
    ncclUniqueId id;
  } offer{};
  if (rank == 0) check(ncclGetUniqueId(&offer.id), "ncclGetUniqueId");
  dtrain::broadcast("bench.nccl_id", {&offer, dtrain::DataType::kUInt8, {static_cast<std::int64_t>(sizeof(offer))}}, 0);
  ncclComm_t comm = nullptr;
  check(ncclCommInitRank(&comm, n, offer.id, rank), "ncclCommInitRank");
  std::vector<float> host(options.max_bytes / 4, 1.0f);
  std::vector<double> t_raw, t_host;
  for (std::size_t bytes : sizes(options)) {
    const std::size_t elements = bytes / 4;
    t_raw.push_back(time_per_op(
        [&] {
          check(ncclAllReduce(gpu.buffer, gpu.buffer, elements, ncclFloat32, ncclSum, comm, gpu.stream),
                "ncclAllReduce");
        },
        iterations_for(bytes), gpu.stream));
    const dtrain::TensorView view{host.data(), dtrain::DataType::kFloat32, {static_cast<std::int64_t>(elements)}};
    t_host.push_back(time_per_op([&] { dtrain::allreduce("bench.host", view, view, {dtrain::ReduceOp::kSum}); },
                                 iterations_for(bytes), gpu.stream));
  }

  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  std::FILE* json = rank == 0 && !options.json.empty() ? std::fopen(options.json.c_str(), "a") : nullptr;
  if (rank == 0) {
    std::printf("allreduce float32 of CUDA tensors on %d ranks (busbw = algbw * 2(n-1)/n, GB/s)\n", n);
    std::printf("%9s | %-20s | %-20s | %-20s | %-20s | %s\n", "size", "NCCL direct", "dtrain NCCL engine",
                "dtrain staged", "dtrain host memory", "NCCL engine vs direct");
    const auto all = sizes(options);
    for (std::size_t i = 0; i < all.size(); ++i) {
      auto cell = [&](double t) {
        char text[64];
        std::snprintf(text, sizeof(text), "%8.1f us %7.2f", t * 1e6, all[i] / t * bus_factor / 1e9);
        return std::string(text);
      };
      std::printf("%9s | %-20s | %-20s | %-20s | %-20s | %5.2fx time\n", human_bytes(all[i]).c_str(),
                  cell(t_raw[i]).c_str(), cell(t_nccl_engine[i]).c_str(), cell(t_staged[i]).c_str(),
                  cell(t_host[i]).c_str(), t_nccl_engine[i] / t_raw[i]);
      if (json) {
        std::fprintf(json,
                     "{\"bench\":\"gpu_allreduce\",\"ranks\":%d,\"bytes\":%zu,\"nccl_direct_s\":%.9g,"
                     "\"nccl_engine_s\":%.9g,\"staged_s\":%.9g,\"host_s\":%.9g}\n",
                     n, all[i], t_raw[i], t_nccl_engine[i], t_staged[i], t_host[i]);
      }
    }
    std::fflush(stdout);
  }
  ncclCommDestroy(comm);
  dtrain::shutdown();

  // ResNet-50's gradients on the GPU through the NCCL engine: fused against one allreduce.
  setenv("DTRAIN_GPU_ENGINE", "nccl", 1);
  dtrain::init();
  const auto shapes = dtrain::bench::resnet50_gradient_shapes();
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (const auto& shape : shapes) {
    offsets.push_back(total);
    total +=
        static_cast<std::size_t>(std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>()));
  }
  float* gradients = nullptr;
  check(cudaMalloc(&gradients, total * 4), "cudaMalloc");
  check(cudaMemset(gradients, 0, total * 4), "cudaMemset");
  const double t_fused = time_per_op(
      [&] {
        std::vector<dtrain::Handle> handles;
        for (std::size_t k = 0; k < shapes.size(); ++k) {
          const auto view = cuda_view(gpu, gradients + offsets[k], shapes[k]);
          handles.push_back(
              dtrain::allreduce_async("resnet50." + std::to_string(k), view, view, {dtrain::ReduceOp::kSum}));
        }
        for (auto& h : handles) h.wait();
      },
      20, gpu.stream);
  const auto flat = cuda_view(gpu, gradients, {static_cast<std::int64_t>(total)});
  const double t_single =
      time_per_op([&] { dtrain::allreduce("resnet50.flat", flat, flat, {dtrain::ReduceOp::kSum}); }, 20, gpu.stream);
  if (rank == 0) {
    std::printf("\nResNet-50 gradients on the GPU (NCCL engine): %zu tensors, %.1f MiB\n", shapes.size(),
                total * 4.0 / (1 << 20));
    std::printf("  fused by the runtime:            %8.2f ms  (%.2fx one allreduce of the same bytes)\n", t_fused * 1e3,
                t_fused / t_single);
    std::printf("  one allreduce of the same bytes: %8.2f ms\n", t_single * 1e3);
    if (json) {
      std::fprintf(json, "{\"bench\":\"gpu_resnet50_gradients\",\"ranks\":%d,\"fused_s\":%.9g,\"single_s\":%.9g}\n", n,
                   t_fused, t_single);
    }
  }
  if (json) std::fclose(json);
  dtrain::shutdown();
  cudaFree(gradients);
  cudaFree(gpu.buffer);
  return 0;
}

int main(int argc, char** argv) {
  CLI::App app{"dtrain-bench-gpu: allreduce of CUDA tensors through dtrain's GPU engines and NCCL"};
  Options options;
  app.add_option("--max-bytes", options.max_bytes, "Largest size (default 256 MiB)");
  app.add_option("--json", options.json, "Append results as JSON lines to this file");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench-gpu: %s\n", e.what());
    return 1;
  }
}
