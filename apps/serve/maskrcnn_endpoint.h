#pragma once

// Mask R-CNN behind /invocations (see maskrcnn_payload.h for the wire
// format), built from the config and weights the trainer left in the model
// directory. No LibTorch here: Predictor hides it.
#include <cstdint>
#include <memory>
#include <string>

#include "serving/endpoint.h"
#include "serving/model_metadata.h"

namespace dtrain::serve {

// Builds the model from model.config with LibTorch using `threads` intra-op
// threads on `device` ("cpu", "cuda", "cuda:N": vision::inference::
// check_device) and loads model.weights. Throws serving::ModelError naming
// the file (bad config key, weights of another architecture or class count).
// Batches (invoke_batch) run as model batches: see Predictor::detect_batch.
std::unique_ptr<serving::Endpoint> make_maskrcnn_endpoint(const serving::ModelMetadata& model, int threads,
                                                          uint64_t max_image_pixels, const std::string& device);

}  // namespace dtrain::serve
