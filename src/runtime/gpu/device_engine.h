// Collectives on CUDA memory. Negotiation treats a CUDA tensor like any other (the device
// kind is one more parameter every rank must agree on); once an operation is planned, the
// OpExecutor hands it to this process's one DeviceEngine instead of the host data path.
//
// Invariants every engine keeps:
// - Inputs are read only after each tensor's ready event (TensorEntry::ready) completed.
// - When execute() returns, the results are ordered before any work the caller queues on
//   each tensor's stream afterwards; the CPU is not made to wait for the GPU to get there
//   (the staged engine, which copies through host memory, does wait).
// - An error (a failed CUDA or NCCL call, a peer lost under NCCL) is a dtrain::Error naming
//   the rank, the device and the call; an engine that saw one refuses all later work.
//
// This header needs no CUDA: a build without it has no engine (make_device_engine throws).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "runtime/environment.h"
#include "runtime/message.h"
#include "runtime/tensor_entry.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class DeviceEngine {
 public:
  virtual ~DeviceEngine() = default;

  // "nccl" or "staged".
  virtual const char* name() const = 0;
  // The CUDA device this engine runs on.
  virtual int device() const = 0;

  // Runs a planned operation on CUDA tensors. `tensors` holds one entry per name of the
  // response; null where this rank has joined (it contributes zeros to an allreduce).
  virtual void execute(const Response& response, std::vector<TensorEntry*>& tensors) = 0;

  // Throws dtrain::Error if work already handed to the GPU has failed since the last call
  // (NCCL reports a dead peer or a network error only this way). Called once per cycle.
  virtual void check_health() {}
};

// Runs an operation on the host data path: the staged engine's way of moving bytes, with
// each entry's views pointing at host copies.
using HostRunner = std::function<void(const Response&, std::vector<TensorEntry*>&)>;

// The engine for this process's GPU `device` (-1: the local rank's, modulo the GPUs present), chosen by
// config.gpu_engine and the job's layout (engine_choice.h), which it logs once. Collective: every rank calls it at the
// same point (the first CUDA operation), since choosing and creating a NCCL communicator exchange data over
// `transport`.
std::unique_ptr<DeviceEngine> make_device_engine(Transport& transport, const RuntimeConfig& config, int device,
                                                 HostRunner host);

}  // namespace dtrain::runtime
