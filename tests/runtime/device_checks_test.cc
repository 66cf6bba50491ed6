// What of the GPU support runs without a GPU: the engine choice, the device as one more
// parameter ranks must agree on, and the checks made when a CUDA tensor is submitted. These
// run in every build (with or without CUDA) and on machines without a GPU; the collectives
// themselves are in gpu_collectives_mp_test.cc.
#include <gtest/gtest.h>

#include <cstdlib>

#include "dtrain/dtrain.h"
#include "runtime/fusion_planner.h"
#include "runtime/gpu/engine_choice.h"
#include "runtime/message.h"
#include "runtime/response_builder.h"
#include "runtime/response_cache.h"
#include "tests/runtime/tensor_values.h"

namespace dtrain::runtime {
namespace {

Request allreduce_on(int rank, DeviceType device, const std::string& name = "grad") {
  Request r;
  r.rank = rank;
  r.type = OpType::kAllreduce;
  r.name = name;
  r.shape = {4};
  r.device = device;
  return r;
}

TEST(GpuEngineChoice, AutoTakesNcclWhenEveryRankHasItsOwnGpu) {
  const auto choice = choose_gpu_engine("auto", true, {"a/0000:01:00.0", "a/0000:02:00.0", "b/0000:01:00.0"});
  EXPECT_EQ(choice.kind, GpuEngineKind::kNccl);
}

TEST(GpuEngineChoice, AutoStagesWhenRanksShareAGpuAndSaysWhich) {
  const auto choice = choose_gpu_engine("auto", true, {"a/0000:01:00.0", "a/0000:02:00.0", "a/0000:01:00.0"});
  EXPECT_EQ(choice.kind, GpuEngineKind::kStaged);
  EXPECT_NE(choice.reason.find("ranks 0,2 share GPU a/0000:01:00.0"), std::string::npos) << choice.reason;
}

TEST(GpuEngineChoice, AutoStagesWithoutNccl) {
  EXPECT_EQ(choose_gpu_engine("auto", false, {"a/1", "a/2"}).kind, GpuEngineKind::kStaged);
}

TEST(GpuEngineChoice, WhatTheUserAsksForWinsOrIsAnError) {
  EXPECT_EQ(choose_gpu_engine("staged", true, {"a/1", "a/2"}).kind, GpuEngineKind::kStaged);
  // Two ranks on one GPU under NCCL: allowed when asked for (NCCL takes it with NCCL_HOSTID set per rank).
  EXPECT_EQ(choose_gpu_engine("nccl", true, {"a/1", "a/1"}).kind, GpuEngineKind::kNccl);
  EXPECT_THROW(choose_gpu_engine("nccl", false, {"a/1", "a/2"}), Error);
  EXPECT_THROW(choose_gpu_engine("gloo", true, {"a/1", "a/2"}), Error);
}

TEST(DeviceNegotiation, CpuOnOneRankAndCudaOnAnotherFailsNamingBoth) {
  const Request a = allreduce_on(0, DeviceType::kCPU), b = allreduce_on(1, DeviceType::kCUDA);
  EXPECT_EQ(build_response({&a, &b}, {}).error,
            "allreduce 'grad': device differs across ranks: rank 0 has cpu; rank 1 has cuda");
  const Request c = allreduce_on(1, DeviceType::kCUDA);
  const Response agreed = build_response({&b, &c}, {});
  ASSERT_TRUE(agreed.ok()) << agreed.error;
  EXPECT_EQ(agreed.device, DeviceType::kCUDA);
}

TEST(DeviceNegotiation, TheDeviceSurvivesEncodingAndTheCache) {
  CycleReport report;
  report.requests.push_back(allreduce_on(1, DeviceType::kCUDA));
  const CycleReport decoded = decode_report(encode(report));
  ASSERT_EQ(decoded.requests.size(), 1u);
  EXPECT_EQ(decoded.requests[0].device, DeviceType::kCUDA);
  // A cached response must not answer the same name submitted on another device.
  const Request cuda = allreduce_on(1, DeviceType::kCUDA);
  const Response response = build_response({&cuda}, {});
  EXPECT_TRUE(request_for_rank(response, 1).same_parameters(cuda));
  EXPECT_FALSE(request_for_rank(response, 1).same_parameters(allreduce_on(1, DeviceType::kCPU)));
}

TEST(DeviceNegotiation, FusionKeepsCpuAndCudaTensorsApart) {
  const Request a = allreduce_on(0, DeviceType::kCPU, "a"), b = allreduce_on(0, DeviceType::kCUDA, "b"),
                c = allreduce_on(0, DeviceType::kCUDA, "c");
  const auto fused =
      fuse_responses({build_response({&a}, {}), build_response({&b}, {}), build_response({&c}, {})}, 1 << 20);
  ASSERT_EQ(fused.size(), 2u);
  EXPECT_EQ(fused[0].names, (std::vector<std::string>{"a"}));
  EXPECT_EQ(fused[1].names, (std::vector<std::string>{"b", "c"}));
}

class Submission : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("DTRAIN_RANK");
    unsetenv("DTRAIN_SIZE");
    init();
  }
  void TearDown() override { shutdown(); }
};

TEST_F(Submission, ACudaTensorThatCannotBeUsedFailsAtOnceNamingItAndItsDevice) {
  // Host memory labelled cuda:0: refused at submission by every build. Without CUDA the build
  // says so; with CUDA and no GPU (CI) the device is missing; with a GPU the pointer is wrong.
  testing::Tensor host(DataType::kFloat32, {4});
  TensorView labelled = host.view;
  labelled.device = {DeviceType::kCUDA, 0};
  try {
    allreduce_async("weights", labelled, labelled);
    FAIL() << "submitted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtrain::allreduce 'weights': input is on cuda:0, but "), std::string::npos)
        << e.what();
  }
}

TEST_F(Submission, ViewsThatMixDevicesAreRefused) {
  testing::Tensor a(DataType::kFloat32, {4}), b(DataType::kFloat32, {4});
  TensorView on_gpu = b.view;
  on_gpu.device = {DeviceType::kCUDA, 0};
  try {
    allreduce_async("mixed", a.view, on_gpu);
    FAIL() << "submitted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output is on cuda:0 but input on cpu"), std::string::npos) << e.what();
  }
  TensorView with_stream = a.view;
  with_stream.cuda_stream = reinterpret_cast<void*>(0x1);
  EXPECT_THROW(allreduce_async("stream", with_stream, with_stream), Error);
}

TEST(GpuEngineKnob, AnUnknownEngineIsANamedErrorAtInit) {
  setenv("DTRAIN_GPU_ENGINE", "gloo", 1);
  try {
    init();
    FAIL() << "initialised";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("DTRAIN_GPU_ENGINE must be auto, nccl or staged (got 'gloo')"),
              std::string::npos)
        << e.what();
  }
  unsetenv("DTRAIN_GPU_ENGINE");
  EXPECT_FALSE(is_initialized());
}

}  // namespace
}  // namespace dtrain::runtime
