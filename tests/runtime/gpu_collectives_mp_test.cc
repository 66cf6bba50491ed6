// Collectives on CUDA tensors across real processes, checked against the values the host
// path is checked against (expected_values.h). ctest runs this binary under `dtrain run`
// with each GPU engine; on a machine without a usable GPU (CI) every test is skipped with
// the reason. Each rank uses cuda:(local_rank % GPUs), so several ranks may share one GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>

#include "dtrain/dtrain.h"
#include "tests/runtime/expected_values.h"
#include "tests/support/error_of.h"
#include "tests/runtime/tensor_values.h"

namespace dtrain {
namespace {

using testing::all_dtypes;
using testing::contribution;
using testing::error_of;
using testing::expected_reduction;
using testing::Tensor;

std::string why_no_gpu() {
  int count = 0;
  const cudaError_t result = cudaGetDeviceCount(&count);
  if (result != cudaSuccess) return cudaGetErrorString(result);
  return count == 0 ? "no CUDA device" : "";
}

#define REQUIRE_GPU()                                                      \
  if (const std::string why = why_no_gpu(); !why.empty()) {                \
    GTEST_SKIP() << "no usable GPU (" << why << "): GPU tests need a GPU"; \
  }

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

int my_device() {
  int count = 1;
  cudaGetDeviceCount(&count);
  return local_rank() % count;
}

// A CUDA copy of a host tensor, on `stream` (null: the legacy default stream).
struct DeviceTensor {
  explicit DeviceTensor(const Tensor& host, cudaStream_t stream = nullptr) : view(host.view) {
    cudaSetDevice(my_device());
    bytes = host.view.num_bytes();
    cudaMalloc(&view.data, bytes + 1);
    cudaMemcpy(view.data, host.view.data, bytes, cudaMemcpyHostToDevice);
    view.device = {DeviceType::kCUDA, my_device()};
    view.cuda_stream = stream;
  }
  ~DeviceTensor() { cudaFree(view.data); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  // The values now, after the work queued on the tensor's stream.
  Tensor to_host() const { return copy_to_host(view); }

  static Tensor copy_to_host(const TensorView& on_gpu) {
    Tensor host(on_gpu.dtype, on_gpu.shape);
    cudaStreamSynchronize(static_cast<cudaStream_t>(on_gpu.cuda_stream));
    cudaMemcpy(host.view.data, on_gpu.data, on_gpu.num_bytes(), cudaMemcpyDeviceToHost);
    return host;
  }

  TensorView view;
  std::size_t bytes = 0;
};

TEST(GpuAllreduce, EveryOpEveryDtypeAgainstTheHostValues) {
  REQUIRE_GPU();
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};
  struct Case {
    std::unique_ptr<DeviceTensor> in, out;
    DataType dtype;
    ReduceOp op;
    Handle handle;
  };
  std::vector<Case> cases;
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : ops) {
      Tensor host(dtype, {3, 5});
      for (std::size_t i = 0; i < host.size(); ++i) host.set(i, contribution(rank(), i, op));
      Case c{
          std::make_unique<DeviceTensor>(host), std::make_unique<DeviceTensor>(Tensor(dtype, {3, 5})), dtype, op, {}};
      c.handle = allreduce_async(std::string("gpu.ar.") + to_string(dtype) + "." + to_string(op), c.in->view,
                                 c.out->view, {op});
      cases.push_back(std::move(c));
    }
  }
  for (auto& c : cases) c.handle.wait();
  for (auto& c : cases) {
    const Tensor out = c.out->to_host();
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out.get(i), expected_reduction(c.op, size(), i, c.dtype))
          << to_string(c.dtype) << " " << to_string(c.op);
    }
  }
}

TEST(GpuAllreduce, InPlaceWithPrescaleAndPostscale) {
  REQUIRE_GPU();
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
    Tensor host(dtype, {6});
    for (std::size_t i = 0; i < 6; ++i) host.set(i, contribution(rank(), i));
    DeviceTensor sum(host), avg(host);
    allreduce(std::string("gpu.scaled.sum.") + to_string(dtype), sum.view, sum.view, {ReduceOp::kSum, 0.5, 4.0});
    allreduce(std::string("gpu.scaled.avg.") + to_string(dtype), avg.view, avg.view, {ReduceOp::kAverage, 2.0, 0.5});
    const Tensor s = sum.to_host(), a = avg.to_host();
    for (std::size_t i = 0; i < 6; ++i) {
      const double total = expected_reduction(ReduceOp::kSum, size(), i, dtype);
      EXPECT_EQ(s.get(i), total * 0.5 * 4.0) << to_string(dtype);
      EXPECT_EQ(a.get(i), total * 2.0 / size() * 0.5) << to_string(dtype);
    }
  }
}

TEST(GpuAllreduce, ManySmallTensorsAreFusedAndEachCorrect) {
  REQUIRE_GPU();
  // 300 tensors of assorted sizes (odd byte counts included) and two dtypes, all in flight.
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<Handle> handles;
  for (int k = 0; k < 300; ++k) {
    const DataType dtype = k % 2 ? DataType::kFloat32 : DataType::kFloat16;
    Tensor host(dtype, {1 + (k * 37) % 1000});
    for (std::size_t i = 0; i < host.size(); ++i) host.set(i, contribution(rank(), i + k));
    tensors.push_back(std::make_unique<DeviceTensor>(host));
    handles.push_back(
        allreduce_async("gpu.many." + std::to_string(k), tensors.back()->view, tensors.back()->view, {ReduceOp::kSum}));
  }
  for (auto& h : handles) h.wait();
  for (int k = 0; k < 300; ++k) {
    const Tensor out = tensors[k]->to_host();
    for (std::size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out.get(i), expected_reduction(ReduceOp::kSum, size(), i + k, out.view.dtype)) << "tensor " << k;
    }
  }
}

TEST(GpuAllreduce, OrderedAfterTheProducerAndBeforeTheConsumerOnTheCallersStream) {
  REQUIRE_GPU();
  // The input is written by an asynchronous copy on the caller's stream and read back by
  // another queued after the handle completes: only the stream ordering makes either right.
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaSetDevice(my_device()));
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  constexpr std::size_t kCount = 16 << 20;  // 64 MiB of float32: the copy takes a while
  float* pinned = nullptr;
  CUDA_OK(cudaHostAlloc(reinterpret_cast<void**>(&pinned), kCount * sizeof(float), cudaHostAllocDefault));
  for (std::size_t i = 0; i < kCount; ++i) pinned[i] = static_cast<float>(contribution(rank(), i));
  Tensor zeros(DataType::kFloat32, {static_cast<std::int64_t>(kCount)});
  DeviceTensor t(zeros, stream);
  CUDA_OK(cudaMemcpyAsync(t.view.data, pinned, kCount * sizeof(float), cudaMemcpyHostToDevice, stream));
  allreduce("gpu.stream", t.view, t.view, {ReduceOp::kSum});
  CUDA_OK(cudaMemcpyAsync(pinned, t.view.data, kCount * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  for (std::size_t i = 0; i < kCount; i += 4099) {
    ASSERT_EQ(pinned[i], expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32)) << "element " << i;
  }
  cudaFreeHost(pinned);
  cudaStreamDestroy(stream);
}

TEST(GpuAllgather, RanksWithDifferentFirstDimensionsIntoRuntimeOwnedGpuMemory) {
  REQUIRE_GPU();
  for (DataType dtype : all_dtypes()) {
    Tensor host(dtype, {rank(), 3});  // rank 0 contributes no rows
    for (std::size_t i = 0; i < host.size(); ++i) host.set(i, rank() * 10 + static_cast<double>(i % 3));
    DeviceTensor t(host);
    auto gathered = allgather(std::string("gpu.gather.") + to_string(dtype), t.view);
    const TensorView out = gathered.output();
    ASSERT_EQ(out.device, (Device{DeviceType::kCUDA, my_device()}));
    const std::int64_t rows = size() * (size() - 1) / 2;
    ASSERT_EQ(out.shape, (std::vector<std::int64_t>{rows, 3}));
    const Tensor back = DeviceTensor::copy_to_host(out);
    std::size_t row = 0;
    for (int r = 0; r < size(); ++r) {
      for (int k = 0; k < r; ++k, ++row) {
        for (std::size_t c = 0; c < 3; ++c) ASSERT_EQ(back.get(row * 3 + c), r * 10.0 + c) << to_string(dtype);
      }
    }
  }
  // Equal first dimensions take NCCL's allgather itself.
  Tensor host(DataType::kInt64, {2, 2});
  for (std::size_t i = 0; i < 4; ++i) host.set(i, rank() * 100 + static_cast<double>(i));
  DeviceTensor t(host);
  const Tensor back = DeviceTensor::copy_to_host(allgather("gpu.gather.even", t.view).output());
  for (int r = 0; r < size(); ++r) {
    for (std::size_t i = 0; i < 4; ++i) ASSERT_EQ(back.get(r * 4 + i), r * 100.0 + i);
  }
}

TEST(GpuBroadcast, FromEveryRoot) {
  REQUIRE_GPU();
  for (int root = 0; root < size(); ++root) {
    Tensor host(DataType::kFloat64, {2, 2});
    for (std::size_t i = 0; i < 4; ++i) host.set(i, rank() == root ? 1000 * root + static_cast<double>(i) : -1);
    DeviceTensor t(host);
    broadcast("gpu.bcast." + std::to_string(root), t.view, root);
    const Tensor back = t.to_host();
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(back.get(i), 1000 * root + static_cast<double>(i));
  }
}

TEST(GpuAlltoall, UnevenSplits) {
  REQUIRE_GPU();
  // Rank r sends (r + j) rows to rank j, each row holding 1000*r + j.
  std::vector<std::int64_t> splits(size());
  std::int64_t rows = 0;
  for (int j = 0; j < size(); ++j) rows += splits[j] = rank() + j;
  Tensor host(DataType::kInt32, {rows});
  std::size_t i = 0;
  for (int j = 0; j < size(); ++j) {
    for (std::int64_t k = 0; k < splits[j]; ++k) host.set(i++, 1000 * rank() + j);
  }
  DeviceTensor t(host);
  auto exchanged = alltoall("gpu.a2a", t.view, splits);
  std::vector<std::int64_t> expected_splits(size());
  for (int r = 0; r < size(); ++r) expected_splits[r] = r + rank();
  EXPECT_EQ(exchanged.received_splits(), expected_splits);
  const Tensor back = DeviceTensor::copy_to_host(exchanged.output());
  std::size_t row = 0;
  for (int r = 0; r < size(); ++r) {
    for (std::int64_t k = 0; k < expected_splits[r]; ++k) ASSERT_EQ(back.get(row++), 1000.0 * r + rank());
  }
}

TEST(GpuReducescatter, EvenAndUnevenFirstDimensionsWithScaling) {
  REQUIRE_GPU();
  for (std::int64_t rows : {static_cast<std::int64_t>(size()) * 2, std::int64_t{5}, std::int64_t{1}}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
      Tensor host(DataType::kFloat32, {rows, 2});
      for (std::size_t i = 0; i < host.size(); ++i) host.set(i, contribution(rank(), i));
      DeviceTensor t(host);
      auto scattered = reducescatter("gpu.rs." + std::to_string(rows) + "." + to_string(op), t.view, {op});
      std::int64_t first_row = 0;
      for (int r = 0; r < rank(); ++r) first_row += rows / size() + (r < rows % size() ? 1 : 0);
      const std::int64_t my_rows = rows / size() + (rank() < rows % size() ? 1 : 0);
      ASSERT_EQ(scattered.output().shape, (std::vector<std::int64_t>{my_rows, 2}));
      const Tensor back = DeviceTensor::copy_to_host(scattered.output());
      for (std::int64_t k = 0; k < my_rows * 2; ++k) {
        const auto global = static_cast<std::size_t>(first_row * 2 + k);
        ASSERT_EQ(back.get(k), expected_reduction(op, size(), global, DataType::kFloat32))
            << rows << " " << to_string(op);
      }
    }
  }
  Tensor host(DataType::kFloat64, {size()});
  for (int i = 0; i < size(); ++i) host.set(i, rank() + 1.0 + i);
  DeviceTensor t(host);
  auto scattered = reducescatter("gpu.rs.scaled", t.view, {ReduceOp::kSum, 3.0, 0.5});
  const double sum = size() * (size() + 1) / 2.0 + size() * rank();
  EXPECT_EQ(DeviceTensor::copy_to_host(scattered.output()).get(0), 1.5 * sum);
}

// A process set's CUDA collectives go through a device engine of its own (a second NCCL
// communicator, or the staged path over the set's transport), at the same time as the job's.
TEST(GpuProcessSets, ASetOfEveryRankBesideTheJobAndASetOfOne) {
  REQUIRE_GPU();
  std::vector<int> everyone(static_cast<std::size_t>(size()));
  for (int r = 0; r < size(); ++r) everyone[static_cast<std::size_t>(r)] = r;
  const ProcessSet all = add_process_set(everyone), first = add_process_set({0});
  Tensor host(DataType::kFloat32, {1000});
  for (std::size_t i = 0; i < host.size(); ++i) host.set(i, contribution(rank(), i));
  DeviceTensor in_set(host), in_job(host);
  Handle through_set = allreduce_async("gpu.sets.all", in_set.view, in_set.view, {ReduceOp::kSum}, all);
  Handle through_job = allreduce_async("gpu.sets.all", in_job.view, in_job.view, {ReduceOp::kSum});
  through_set.wait();
  through_job.wait();
  const Tensor s = in_set.to_host(), j = in_job.to_host();
  for (std::size_t i = 0; i < host.size(); ++i) {
    ASSERT_EQ(s.get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32)) << "set, element " << i;
    ASSERT_EQ(j.get(i), expected_reduction(ReduceOp::kSum, size(), i, DataType::kFloat32)) << "job, element " << i;
  }
  if (first.included()) {
    DeviceTensor solo(host);
    allreduce("gpu.sets.one", solo.view, solo.view, {ReduceOp::kSum}, first);
    const Tensor alone = solo.to_host();
    for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(alone.get(i), contribution(0, i)) << "element " << i;
  }
  remove_process_set(all);
  remove_process_set(first);
}

TEST(GpuMismatch, CpuOnOneRankAndCudaOnTheOthersFailsOnEveryRank) {
  REQUIRE_GPU();
  Tensor host(DataType::kFloat32, {4});
  DeviceTensor on_gpu(host);
  const std::string message = error_of(
      [&] { allreduce("gpu.mixed", rank() == 0 ? host.view : on_gpu.view, rank() == 0 ? host.view : on_gpu.view); });
  EXPECT_NE(message.find("allreduce 'gpu.mixed': device differs across ranks: rank 0 has cpu; "), std::string::npos)
      << message;
  // The job goes on: the next operation works.
  allreduce("gpu.after.mixed", on_gpu.view, on_gpu.view, {ReduceOp::kSum});
}

// Run alone, by scripts/gpu/test (it ends the job): rank 1 dies between NCCL collectives, and
// the job must end with a message naming it, not hang in NCCL.
TEST(GpuJobOnly, RankOneDiesBetweenCollectives) {
  REQUIRE_GPU();
  Tensor host(DataType::kFloat32, {1 << 20});
  DeviceTensor t(host);
  allreduce("gpu.before.the.crash", t.view, t.view);
  if (rank() == 1) raise(SIGKILL);
  for (int step = 0; step < 600; ++step) {
    allreduce_async("gpu.after.the.crash." + std::to_string(step), t.view, t.view);  // queued on the GPU
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace
}  // namespace dtrain
