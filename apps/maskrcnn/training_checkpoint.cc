#include "apps/maskrcnn/training_checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <torch/version.h>

#include "vision/torch_save/torch_checkpoint.h"
#include "vision/modeling/model_weights.h"
#include "vision/solver/multi_tensor_sgd.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;
namespace torch_save = vision::torch_save;

constexpr const char* kMomentumPrefix = "momentum.";
constexpr const char* kLossScale = "loss_scale";  // float16 training's, with the good steps since it changed
constexpr const char* kLossScaleGoodSteps = "loss_scale_good_steps";

fs::path solver_file(const fs::path& model_file) {
  fs::path solver = model_file;
  solver.replace_extension(".solver.pth");
  return solver;
}

void write_pointer(const fs::path& output_dir, const std::string& model_file) {
  const fs::path pointer = output_dir / "last_checkpoint";
  const fs::path temporary = output_dir / "last_checkpoint.tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << model_file << "\n";
    out.flush();
    if (!out) throw std::runtime_error(temporary.string() + ": cannot write: " + std::strerror(errno));
  }
  fs::rename(temporary, pointer);
}

}  // namespace

std::string checkpoint_name(int64_t iteration) {
  char name[32];
  std::snprintf(name, sizeof name, "model_%07lld.pth", static_cast<long long>(iteration));
  return name;
}

void save_training_checkpoint(const fs::path& output_dir, const std::string& model_file,
                              const vision::modeling::MaskRcnnImpl& model, torch::optim::SGD& sgd,
                              const libtorch::NamedTensors& trainable, int64_t iteration,
                              const vision::solver::LossScaler* scaler) {
  torch_save::StateDict solver;
  solver.push_back({"iteration", torch::tensor(iteration, torch::kInt64)});
  if (scaler) {
    solver.push_back({kLossScale, torch::tensor(scaler->scale(), torch::kFloat64)});
    solver.push_back({kLossScaleGoodSteps, torch::tensor(scaler->good_steps(), torch::kInt64)});
  }
  auto& state = sgd.state();
  for (const auto& [name, parameter] : trainable) {
    auto it = state.find(vision::solver::optimizer_state_key(parameter));
    if (it == state.end()) continue;  // no step yet
    const auto& sgd_state = static_cast<const torch::optim::SGDParamState&>(*it->second);
    if (sgd_state.momentum_buffer().defined()) solver.push_back({kMomentumPrefix + name, sgd_state.momentum_buffer()});
  }
  // Solver first, model second, pointer last: the pointer never names a
  // model whose solver state is missing.
  torch_save::save_state_dict(solver_file(output_dir / model_file).string(), solver);
  vision::modeling::save_weights(model, (output_dir / model_file).string());
  write_pointer(output_dir, model_file);
}

std::optional<fs::path> last_checkpoint(const fs::path& output_dir) {
  std::ifstream in(output_dir / "last_checkpoint");
  std::string name;
  if (!in || !std::getline(in, name) || name.empty()) return std::nullopt;
  return output_dir / name;
}

int64_t load_training_checkpoint(const fs::path& model_file, vision::modeling::MaskRcnnImpl& model,
                                 torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable,
                                 vision::solver::LossScaler* scaler) {
  const fs::path solver_path = solver_file(model_file);
  if (!fs::exists(solver_path)) {
    throw std::runtime_error(solver_path.string() + ": missing; --resume needs the solver state next to " +
                             model_file.string());
  }
  vision::modeling::load_weights(model, model_file.string());
  const torch_save::StateDict solver = torch_save::load_state_dict(solver_path.string());
  std::map<std::string, at::Tensor> momentum;
  std::optional<int64_t> iteration, good_steps;
  std::optional<double> loss_scale;
  for (const auto& [name, tensor] : solver) {
    if (name == "iteration") {
      iteration = tensor.item<int64_t>();
    } else if (name == kLossScale) {
      loss_scale = tensor.item<double>();
    } else if (name == kLossScaleGoodSteps) {
      good_steps = tensor.item<int64_t>();
    } else if (name.starts_with(kMomentumPrefix)) {
      momentum[name.substr(std::strlen(kMomentumPrefix))] = tensor;
    }
  }
  if (!iteration) throw std::runtime_error(solver_path.string() + ": no iteration recorded");
  // A checkpoint of a run without float16 has no scale: the scaler starts afresh.
  if (scaler && loss_scale && good_steps) scaler->restore(*loss_scale, *good_steps);
  auto& state = sgd.state();
  for (const auto& [name, parameter] : trainable) {
    auto it = momentum.find(name);
    if (it == momentum.end()) continue;
    if (!it->second.sizes().equals(parameter.sizes())) {
      throw std::runtime_error(solver_path.string() + ": momentum of " + name + " has another shape than the model's");
    }
    auto sgd_state = std::make_unique<torch::optim::SGDParamState>();
    sgd_state->momentum_buffer(it->second.to(parameter.options()).clone());  // on the parameter's device
    state[vision::solver::optimizer_state_key(parameter)] = std::move(sgd_state);
    momentum.erase(it);
  }
  if (!momentum.empty()) {
    throw std::runtime_error(solver_path.string() + ": momentum of " + momentum.begin()->first +
                             ", which is not a trainable parameter of this model (another config?)");
  }
  return *iteration;
}

}  // namespace dtrain::maskrcnn
