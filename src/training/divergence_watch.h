#pragma once

// Detectron2 stops training on a NaN or infinite loss: the weights are lost from there on,
// and hours of NaN steps help nobody. Reading the loss on the host every step would make the
// CPU wait for the GPU at every step, so the watch keeps its verdict on the loss's device
// (the first non-finite iteration and its losses, a few tiny kernels a step) and the hooks
// ask for it when they read the losses anyway: at each progress report, before a checkpoint,
// an evaluation or an elastic commit, and at the end. The question is collective: a loss that
// is NaN on one rank only has made every rank's averaged gradients NaN, so all ranks stop
// together, naming the first such iteration on any rank.
#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include <map>
#include <utility>

namespace dtrain::training {

class DivergenceWatch {
 public:
  // `advice` ends the error: what the user may change (the model's settings).
  DivergenceWatch(int rank, std::string advice) : rank_(rank), advice_(std::move(advice)) {}

  // Records iteration's losses (0-based) and their sum without reading them on the host.
  void observe(const std::map<std::string, at::Tensor>& losses, const at::Tensor& total, int64_t iteration);

  // Throws std::runtime_error on every rank naming the first non-finite iteration on any rank
  // (and its losses, on the rank that saw them), if there was one. Every rank must call it at
  // the same iterations: it is an allreduce.
  void check() const;

 private:
  int rank_;
  std::string advice_;
  std::vector<std::string> names_;  // of the losses, in LossDict order
  at::Tensor first_bad_;            // int64 scalar: the first non-finite iteration, or -1
  at::Tensor values_;               // that iteration's losses
};

}  // namespace dtrain::training
