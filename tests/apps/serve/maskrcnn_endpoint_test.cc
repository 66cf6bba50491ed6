// The Mask R-CNN endpoint in-process, on a small shapes model with random
// weights (every detection kept): a batch of requests answers each as it
// would be answered alone, and a request that cannot be served fails alone.
#include "apps/serve/maskrcnn_endpoint.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serving/base64.h"
#include "tests/apps/serve/same_detections.h"
#include "tests/support/temp_dir.h"
#include "vision/config/maskrcnn_defaults.h"
#include "vision/config/model_options.h"
#include "vision/data/image_codec.h"
#include "vision/data/synthetic_shapes.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"

namespace dtrain::serve {
namespace {

using nlohmann::json;
using serving::InvocationError;
using serving::InvocationOutcome;
using serving::InvocationRequest;

// The shapes config at test sizes, and weights of its random initialisation.
class MaskRcnnEndpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    scratch_ = new dtrain::testing::TempDir();
    model_.kind = serving::ModelKind::kMaskRcnn;
    model_.directory = scratch_->path();
    model_.config = scratch_->path() / "config.yaml";
    model_.weights = scratch_->path() / "model_final.pth";
    model_.categories = {{1, "square"}, {2, "circle"}, {3, "triangle"}};
    std::ofstream(model_.config) << "_BASE_: \"" << SHAPES_CONFIG << "\"\n"
                                 << "MODEL:\n  ROI_HEADS:\n    SCORE_THRESH_TEST: 0.0\n"
                                 << "INPUT:\n  MIN_SIZE_TEST: 64\n  MAX_SIZE_TEST: 96\n";
    vision::config::Config config = vision::config::maskrcnn_defaults();
    config.merge_from_file(model_.config.string());
    torch::manual_seed(1);
    vision::modeling::MaskRcnn net(vision::config::to_model_options(config));
    vision::modeling::save_weights(*net, model_.weights.string());
  }
  static void TearDownTestSuite() { delete scratch_; }

  static std::unique_ptr<serving::Endpoint> endpoint() {
    return make_maskrcnn_endpoint(model_, 1, uint64_t{1} << 20, "cpu");
  }

  static dtrain::testing::TempDir* scratch_;
  static serving::ModelMetadata model_;
};

dtrain::testing::TempDir* MaskRcnnEndpointTest::scratch_ = nullptr;
serving::ModelMetadata MaskRcnnEndpointTest::model_;

InvocationRequest png_request(uint32_t height, uint32_t width, uint64_t seed) {
  const std::vector<uint8_t> png = vision::encode_png(vision::generate_shapes_image(height, width, seed).image);
  return {"image/png", std::string(png.begin(), png.end()), {}};
}

int status_of(const InvocationOutcome& outcome) {
  if (!outcome.error) return outcome.response.status;
  try {
    std::rethrow_exception(outcome.error);
  } catch (const InvocationError& e) {
    return e.status();
  } catch (...) {
    return 500;
  }
}

TEST_F(MaskRcnnEndpointTest, ABatchAnswersEachRequestAsItWouldBeAnsweredAlone) {
  auto served = endpoint();
  const InvocationRequest a = png_request(64, 64, 1), b = png_request(64, 64, 2), c = png_request(80, 100, 3);
  const std::string a_base64 = serving::encode_base64(reinterpret_cast<const uint8_t*>(a.body.data()), a.body.size());
  const std::vector<InvocationRequest> requests = {
      a,
      {"image/png", a.body.substr(0, a.body.size() / 2), {}},  // cut short: does not decode
      b,
      {"application/json", json{{"image", a_base64}, {"score_threshold", 0.3}}.dump(), {}},
      {"image/gif", a.body, {}},
      c,
  };
  const std::vector<InvocationOutcome> outcomes = served->invoke_batch(requests);
  ASSERT_EQ(outcomes.size(), requests.size());
  std::vector<int> statuses;
  for (const InvocationOutcome& outcome : outcomes) statuses.push_back(status_of(outcome));
  EXPECT_EQ(statuses, (std::vector<int>{200, 400, 200, 200, 415, 200}));

  const std::string a_alone = served->invoke(a).body;
  ASSERT_GT(json::parse(a_alone)["detections"].size(), 0u) << "nothing to compare";
  testing::expect_same_detections(outcomes[0].response.body, a_alone);
  testing::expect_same_detections(outcomes[2].response.body, served->invoke(b).body);
  // c is the only image of its padded size: it ran alone, as invoke runs it.
  EXPECT_EQ(outcomes[5].response.body, served->invoke(c).body);
  // The JSON request kept its own threshold.
  for (const json& d : json::parse(outcomes[3].response.body)["detections"]) EXPECT_GE(d["score"].get<double>(), 0.3);
}

TEST_F(MaskRcnnEndpointTest, ABatchOfRequestsThatAllFailAnswersEachWithItsError) {
  auto served = endpoint();
  const std::vector<InvocationOutcome> outcomes =
      served->invoke_batch({{"image/png", "not a png", {}}, {"text/plain", "hello", {}}});
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(status_of(outcomes[0]), 400);
  EXPECT_EQ(status_of(outcomes[1]), 415);
}

}  // namespace
}  // namespace dtrain::serve
