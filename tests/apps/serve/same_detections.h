#pragma once

// Two Mask R-CNN answers (the endpoint's JSON) with the same detections up to
// float rounding: a batch of images sums in another order than one image, so
// scores and boxes may differ by a few ulps. Ids and masks must be equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

namespace dtrain::serve::testing {

inline void expect_same_detections(const std::string& batched, const std::string& alone) {
  const nlohmann::json b = nlohmann::json::parse(batched), a = nlohmann::json::parse(alone);
  ASSERT_EQ(b["width"], a["width"]);
  ASSERT_EQ(b["height"], a["height"]);
  ASSERT_EQ(b["detections"].size(), a["detections"].size());
  for (size_t i = 0; i < a["detections"].size(); ++i) {
    const nlohmann::json& x = b["detections"][i];
    const nlohmann::json& y = a["detections"][i];
    EXPECT_EQ(x["category_id"], y["category_id"]) << "detection " << i;
    EXPECT_NEAR(x["score"].get<double>(), y["score"].get<double>(), 1e-5) << "detection " << i;
    for (size_t c = 0; c < 4; ++c) {
      const double expected = y["bbox"][c].get<double>();
      EXPECT_NEAR(x["bbox"][c].get<double>(), expected, 1e-5 * std::max(1.0, std::abs(expected))) << "detection " << i;
    }
    EXPECT_EQ(x["segmentation"], y["segmentation"]) << "detection " << i;
  }
}

}  // namespace dtrain::serve::testing
