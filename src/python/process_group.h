#pragma once

// torch.distributed's backend "dtrain": a c10d process group whose collectives are the
// runtime's. PyTorch issues a group's collectives in the same order on every rank but does not
// name them; the runtime matches operations across ranks by name, so the n-th call on a group
// is named after the group and n, and a rank that called something else n-th (another
// collective, another shape) is named in the mismatch error every rank gets. Operations start
// on the caller's thread. A thread blocked in Work::wait() finishes its operation itself; the
// group's completion thread finishes, in order, those whose future someone asked for (DDP's
// buckets: the future completes there, and the callbacks chained on it run there).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "dtrain/dtrain.h"
#include "python/completion_thread.h"

namespace dtrain::python {

class DtrainProcessGroup final : public c10d::Backend {
 public:
  // `rank` and `size` as PyTorch numbers the group. `set`: the runtime's process set of a group
  // over part of the world (new_group(ranks=...)), whose ranks PyTorch numbers 0..size-1 in
  // the same order; the global set for the whole world. `group_id` keeps the names of
  // different groups' operations apart.
  DtrainProcessGroup(int rank, int size, std::string group_id, ProcessSet set = {});
  ~DtrainProcessGroup() override;

  const std::string getBackendName() const override { return "dtrain"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& options) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& options) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& options) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& options) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& options) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& options) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& options) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& options) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& options) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& options) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& options) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& options) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& options) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int destination, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int source, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return calls_; }

 private:
  // Waits for the operation, puts its results in place and returns the tensors the future
  // holds. Runs on the completion thread, or on a thread waiting for the operation.
  using Finish = std::function<std::vector<at::Tensor>()>;

  // The name of the next operation on this group. Every collective takes its name before it
  // checks anything: a call one rank refuses leaves the ranks' counts in step.
  std::string next_name();
  // The Work of a started operation: `finish` runs once, on a thread that waits for it or on
  // the completion thread; `await_runtime` sleeps until the runtime has finished the
  // operation, without driving it (the completion thread's wait).
  c10::intrusive_ptr<c10d::Work> finish_later(c10d::OpType type, const std::vector<at::Tensor>& outputs,
                                              std::function<void()> await_runtime, Finish finish);

  // A root as PyTorch numbers it in the group, as the runtime takes it: a job rank.
  int job_rank(std::int64_t group_rank) const;

  std::string group_id_;
  ProcessSet set_;
  std::vector<int> members_;  // the set's job ranks (the group's ranks in order); empty: the world
  std::atomic<std::uint64_t> calls_{0};
  // Shared with the group's Works, which hand it their operations.
  std::shared_ptr<CompletionThread> completions_;
};

}  // namespace dtrain::python
