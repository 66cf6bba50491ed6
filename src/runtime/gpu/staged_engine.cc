#include "runtime/gpu/staged_engine.h"

#include "runtime/gpu/cuda_check.h"
#include "runtime/op_executor.h"

namespace dtrain::runtime {
namespace {

constexpr std::size_t kAlignment = 256;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// What of `entry` lives in host memory while the host path runs: the input for every
// operation, the output too where the caller gave one (allreduce, broadcast).
bool has_given_output(OpType type) { return type == OpType::kAllreduce || type == OpType::kBroadcast; }

}  // namespace

StagedEngine::StagedEngine(int device, HostRunner host) : device_(device), host_(std::move(host)) {
  gpu::DeviceScope scope(device_);
  gpu::cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

StagedEngine::~StagedEngine() {
  int previous_device = device_;
  cudaGetDevice(&previous_device);  // the thread that shuts down keeps its device
  cudaSetDevice(device_);
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  if (staging_) cudaFreeHost(staging_);
  cudaSetDevice(previous_device);
}

std::byte* StagedEngine::staging(std::size_t bytes) {
  if (bytes <= staging_bytes_) return staging_;
  if (staging_)
    gpu::cuda_check(cudaFreeHost(staging_), "cudaFreeHost");  // no copy uses it: each operation waits for its own
  staging_ = nullptr;
  staging_bytes_ = 0;
  void* memory = nullptr;
  gpu::cuda_check(cudaHostAlloc(&memory, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  staging_ = static_cast<std::byte*>(memory);
  staging_bytes_ = bytes;
  return staging_;
}

void StagedEngine::execute(const Response& response, std::vector<TensorEntry*>& tensors) {
  gpu::DeviceScope scope(device_);
  const bool given_output = has_given_output(response.type);
  // Each tensor's host copy: of the input (for broadcast, the tensor itself), which the host
  // path reduces or receives into in place where the caller gave an output (allreduce,
  // broadcast) and reads from otherwise (its own output then lives in the shadow's state).
  std::size_t total = 0;
  for (TensorEntry* t : tensors) {
    if (t) total += aligned(t->input.num_bytes());
  }
  std::byte* host = staging(std::max<std::size_t>(total, 1));

  std::vector<TensorEntry> shadows(tensors.size());
  std::vector<TensorEntry*> shadow_of(tensors.size(), nullptr);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    TensorEntry* t = tensors[i];
    if (!t) continue;  // a rank that has joined: the host path contributes its zeros
    if (t->ready)
      gpu::cuda_check(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(t->ready.get()), 0), "cudaStreamWaitEvent");
    TensorEntry& shadow = shadows[i];
    shadow.request = t->request;
    shadow.state = std::make_shared<detail::OpState>();
    shadow.submitted = t->submitted;
    shadow.input = TensorView{host + offset, t->input.dtype, t->input.shape};
    const TensorView& source = response.type == OpType::kBroadcast ? t->output : t->input;
    gpu::cuda_check(
        cudaMemcpyAsync(shadow.input.data, source.data, source.num_bytes(), cudaMemcpyDeviceToHost, stream_),
        "cudaMemcpyAsync (to host)");
    if (given_output) shadow.output = shadow.input;  // reduced or received in place, on the host
    offset += aligned(t->input.num_bytes());
    shadow_of[i] = &shadow;
  }
  gpu::cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");

  host_(response, shadow_of);

  for (std::size_t i = 0; i < tensors.size(); ++i) {
    TensorEntry* t = tensors[i];
    if (!t) continue;
    const TensorEntry& shadow = shadows[i];
    if (given_output) {
      gpu::cuda_check(
          cudaMemcpyAsync(t->output.data, shadow.output.data, t->output.num_bytes(), cudaMemcpyHostToDevice, stream_),
          "cudaMemcpyAsync (to device)");
      continue;
    }
    const TensorView& result = shadow.state->output;
    void* out = allocate_output(*t, result.shape);
    if (result.num_bytes()) {
      gpu::cuda_check(cudaMemcpyAsync(out, result.data, result.num_bytes(), cudaMemcpyHostToDevice, stream_),
                      "cudaMemcpyAsync (to device)");
    }
    t->state->received_splits = shadow.state->received_splits;
  }
  // The results are in place before the handles complete; the staging memory is free again.
  gpu::cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

}  // namespace dtrain::runtime
