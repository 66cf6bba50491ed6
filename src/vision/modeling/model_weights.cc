#include "vision/modeling/model_weights.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "vision/torch_save/torch_checkpoint.h"
#include "vision/torch_save/torchvision_key_names.h"

namespace dtrain::vision::modeling {
namespace {

// The layers whose shape depends on the number of classes.
bool is_class_specific(const std::string& key) {
  return key.rfind("roi_heads.box_predictor.", 0) == 0 ||
         key.rfind("roi_heads.mask_predictor.mask_fcn_logits.", 0) == 0;
}

std::string shape_of(const at::Tensor& t) { return c10::str(t.sizes()); }

std::map<std::string, at::Tensor> model_state(const MaskRcnnImpl& model) {
  std::map<std::string, at::Tensor> state;
  for (const auto& item : model.named_parameters()) state[item.key()] = item.value();
  for (const auto& item : model.named_buffers()) state[item.key()] = item.value();
  return state;
}

// A list of at most `limit` names, then "and N more".
std::string name_list(const std::vector<std::string>& names, size_t limit = 6) {
  std::ostringstream out;
  for (size_t i = 0; i < names.size() && i < limit; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > limit) out << " and " << names.size() - limit << " more";
  return out.str();
}

}  // namespace

WeightsReport load_weights(MaskRcnnImpl& model, const std::string& path) {
  const torch_save::StateDict file = torch_save::load_state_dict(path);
  std::map<std::string, at::Tensor> state = model_state(model);
  WeightsReport report;
  std::vector<std::string> unexpected, mismatched, seen;
  std::map<std::string, at::Tensor> to_copy;
  for (const auto& entry : file) {
    const std::string key = torch_save::modern_torchvision_key(entry.name);
    auto it = state.find(key);
    if (it == state.end()) {
      if (torch_save::is_ignorable_extra_key(key)) {
        report.ignored.push_back(key);
      } else {
        unexpected.push_back(entry.name + " " + shape_of(entry.tensor));
      }
      continue;
    }
    seen.push_back(key);
    if (it->second.sizes() != entry.tensor.sizes()) {
      if (is_class_specific(key)) {
        report.reinitialized.push_back(key);
        continue;
      }
      mismatched.push_back(key + " (file " + shape_of(entry.tensor) + ", model " + shape_of(it->second) + ")");
      continue;
    }
    to_copy[key] = entry.tensor;
  }
  std::vector<std::string> missing;
  for (const auto& [key, tensor] : state) {
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    // Ordinary batch norm counts its batches; a frozen-norm file has no count.
    if (torch_save::is_ignorable_extra_key(key)) continue;
    missing.push_back(key + " " + shape_of(tensor));
  }
  std::string problems;
  if (!mismatched.empty()) problems += " shape mismatch: " + name_list(mismatched) + ";";
  if (!missing.empty()) problems += " missing: " + name_list(missing) + ";";
  if (!unexpected.empty()) problems += " unexpected: " + name_list(unexpected) + ";";
  if (!problems.empty()) {
    problems.pop_back();
    throw std::runtime_error(path + ": not weights of this model (MODEL.RESNETS.DEPTH " +
                             std::to_string(model.options().backbone.depth) + ", " +
                             std::to_string(model.options().roi_heads.num_classes) + " classes):" + problems);
  }
  torch::NoGradGuard no_grad;
  for (const auto& [key, tensor] : to_copy) {
    state[key].copy_(tensor);
    report.loaded.push_back(key);
  }
  return report;
}

void save_weights(const MaskRcnnImpl& model, const std::string& path) {
  torch_save::StateDict out;
  for (const auto& item : model.named_parameters()) out.push_back({item.key(), item.value().detach()});
  for (const auto& item : model.named_buffers()) out.push_back({item.key(), item.value()});
  torch_save::save_state_dict(path, out);
}

}  // namespace dtrain::vision::modeling
