// ZeRO's split of the parameters among ranks (DistributedOptimizer's Sharding): which rank
// owns each parameter, and the collectives that move gradients to their owners and stepped
// parameters from them. Gradients and parameters travel in one flat buffer per dtype and
// device: rank 0's parameters in a row, then rank 1's, ..., each rank's segment padded to the
// longest, so a reducescatter hands every owner exactly its gradients and an allgather every
// rank all the owners' values.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/dtrain.h"

namespace dtrain::libtorch {

// The owner of each of `sizes` (numbers of values): largest first, each to the rank owning
// the fewest values so far (ties: the lowest rank; equal sizes keep their order). Every rank
// computes the same from the same sizes.
std::vector<int> assign_owners(const std::vector<std::int64_t>& sizes, int world_size);

class ParameterShards {
 public:
  // Owners for `parameters` (all of them, trainable or not: freezing one later does not move
  // the others, whose optimizer state lives on their owners) in a world of `world_size`.
  ParameterShards(std::vector<at::Tensor> parameters, std::vector<std::string> names, int world_size, int rank);

  int world_size() const { return world_size_; }
  bool owns(std::size_t index) const { return owners_[index] == rank_; }
  std::vector<std::string> owned_names() const;

  // Reduces the gradients of the parameters that require one (zeros where a parameter has
  // none) and leaves each rank only its own parameters' result; the others' .grad are freed.
  void reduce_scatter_gradients(const ReduceOptions& options, const std::string& name_prefix);
  // Copies every owner's parameter values to every rank.
  void allgather_parameters(const std::string& name_prefix);

  // Takes the gradients of parameters owned elsewhere out of .grad (so the optimizer steps
  // only this rank's) until the returned guard puts them back.
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
  // One flat buffer's content: the parameters of one dtype and device taking part, by owner.
  struct Layout {
    std::string key;                                // dtype and device, in the collective's name
    at::TensorOptions options;                      // that dtype and device
    std::vector<std::vector<std::size_t>> members;  // per rank: parameter indices, in order
    std::int64_t segment = 0;                       // values per rank, padding included
  };
  std::vector<Layout> layouts(bool only_trainable) const;

  std::vector<at::Tensor> parameters_;
  std::vector<std::string> names_;
  std::vector<int> owners_;
  int world_size_;
  int rank_;
};

}  // namespace dtrain::libtorch
