// ZeRO's split of the parameters among ranks (DistributedOptimizer's Sharding): which rank
// owns each parameter, and the collectives that move gradients to their owners and stepped
// parameters from them.
//
// The parameters are cut into buckets of about `bucket_bytes`, in the reverse of their order
// (roughly the order backward produces their gradients), so a bucket's reduction can start
// while backward still runs. A bucket travels as one flat buffer: rank 0's parameters in a row,
// then rank 1's, ..., each rank's segment padded to the longest, so a reducescatter hands every
// owner exactly its gradients and an allgather every rank all the owners' values.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/torch.h"

namespace dtrain::libtorch {

// The owner of each of `sizes` (numbers of values): largest first, each to the rank with the
// fewest values so far counting `load` (per rank, updated; ties: the lowest rank; equal sizes
// keep their order). Every rank computes the same from the same sizes.
std::vector<int> assign_owners(const std::vector<std::int64_t>& sizes, std::vector<std::int64_t>& load);
inline std::vector<int> assign_owners(const std::vector<std::int64_t>& sizes, int world_size) {
  std::vector<std::int64_t> load(static_cast<std::size_t>(world_size), 0);
  return assign_owners(sizes, load);
}

class ParameterShards {
 public:
  // Owners for `parameters` (all of them, trainable or not: freezing one later does not move
  // the others, whose optimizer state lives on their owners) in a world of `world_size`.
  ParameterShards(std::vector<at::Tensor> parameters, std::vector<std::string> names, int world_size, int rank,
                  std::int64_t bucket_bytes, ReduceOptions reduce, std::string name_prefix);
  ~ParameterShards();
  ParameterShards(const ParameterShards&) = delete;
  ParameterShards& operator=(const ParameterShards&) = delete;

  int world_size() const { return world_size_; }
  int rank() const { return rank_; }
  bool owns(std::size_t index) const { return owners_[index] == rank_; }
  std::vector<std::string> owned_names() const;

  // Backward produced this pass's last gradient of parameter `index`: once it has them all, a
  // bucket starts its reducescatter.
  void gradient_ready(std::size_t index);
  // Starts the buckets that have not started (a parameter without gradient contributes zeros)
  // and waits for all; each rank is left with its own parameters' reduced gradients, the
  // others' .grad are freed. Only parameters that require a gradient take part.
  void reduce_scatter_gradients();
  // Waits for the reductions in flight, ignoring their errors, and forgets the step's.
  void abandon_step();
  // Whether a bucket's reduction started and synchronize() has not collected it.
  bool in_flight() const;
  // Copies every owner's values of its parameters to every rank. Frozen ones too: an optimizer
  // steps a frozen parameter that still has a gradient (LibTorch's zero_grad() zeroes it,
  // momentum and weight decay still move it), and its owner alone did.
  void allgather_parameters();

  // Takes the gradients of parameters owned elsewhere out of .grad (so the optimizer steps
  // only this rank's) until the guard puts them back.
  class SetAside {
   public:
    explicit SetAside(ParameterShards& shards);
    ~SetAside();
    SetAside(const SetAside&) = delete;
    SetAside& operator=(const SetAside&) = delete;

   private:
    ParameterShards& shards_;
    std::vector<std::pair<std::size_t, at::Tensor>> kept_;
  };

  // Forgets the optimizer's state of parameters owned by other ranks (loaded from a whole
  // checkpoint, or consolidated here).
  void drop_state_owned_elsewhere(torch::optim::Optimizer& optimizer) const;
  // Collective: every rank's state reaches `root`'s optimizer.
  void consolidate_state(torch::optim::Optimizer& optimizer, int root) const;

 private:
  // Where a bucket's trainable parameters sit in its flat buffer.
  struct Layout {
    std::vector<std::vector<std::size_t>> by_owner;  // parameter indices per rank, in order
    std::int64_t segment = 0;                        // values per rank, padding included
  };
  struct Bucket {
    std::vector<std::size_t> members;  // parameter indices, one dtype and device
    at::TensorOptions options;
    // This step's reduction.
    Layout layout;
    at::Tensor flat;  // from start to unpacking only: kept, it would hold a whole gradient's worth
    bool started = false;
    TensorHandle handle;
  };
  Layout lay_out(const Bucket& bucket, bool only_trainable) const;
  void start(std::size_t bucket_index);

  std::vector<at::Tensor> parameters_;
  std::vector<std::string> names_;
  std::vector<int> owners_;
  std::vector<std::size_t> bucket_of_;
  std::vector<bool> ready_;  // this step: the gradient is complete
  std::vector<Bucket> buckets_;
  int world_size_;
  int rank_;
  ReduceOptions reduce_;
  std::string name_prefix_;
};

}  // namespace dtrain::libtorch
