#pragma once

// Loading and saving Mask R-CNN weights as torch.save state dicts: the
// format torchvision publishes its COCO weights in and the one dtrain saves
// its own in, so weights move freely between the two.
#include <string>
#include <vector>

#include "vision/modeling/mask_rcnn.h"

namespace dtrain::vision::modeling {

struct WeightsReport {
  std::vector<std::string> loaded;
  // Class-specific predictor layers left at their fresh initialisation
  // because the file was trained for another number of classes
  // (fine-tuning a COCO model on a new dataset).
  std::vector<std::string> reinitialized;
  // Entries of the file that the model has no use for but that carry no
  // weights of it (num_batches_tracked of ordinary batch norm).
  std::vector<std::string> ignored;
};

// Loads the state dict in `path` (torch.save zip: a bare state dict or one
// under "model"/"state_dict") into `model`. torchvision's pre-0.13 key names
// are renamed to the current ones. Every model weight must be present with
// its shape, and every file entry must belong to the model, except the
// class-specific predictor layers when their class count differs (then
// reinitialized). Anything else throws std::runtime_error naming the file
// and the offending keys with their shapes — the error a checkpoint of
// another architecture or depth gets.
WeightsReport load_weights(MaskRcnnImpl& model, const std::string& path);

// Saves every parameter and buffer under torchvision's names.
void save_weights(const MaskRcnnImpl& model, const std::string& path);

}  // namespace dtrain::vision::modeling
