#include "tests/apps/maskrcnn/model_weights_file.h"

#include "vision/config/maskrcnn_defaults.h"
#include "vision/config/model_options.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"

namespace dtrain::maskrcnn::testing {

void save_model_weights(const std::string& config_file, const std::vector<std::string>& overrides, uint64_t seed,
                        const std::string& path) {
  vision::config::Config config = vision::config::maskrcnn_defaults();
  config.merge_from_file(config_file);
  config.merge_from_list(overrides);
  torch::manual_seed(seed);
  vision::modeling::MaskRcnn model(vision::config::to_model_options(config));
  vision::modeling::save_weights(*model, path);
}

}  // namespace dtrain::maskrcnn::testing
