#pragma once

// The MNIST network behind /invocations (see mnist_payload.h for the wire
// format). The header names no LibTorch type.
#include <memory>
#include <string>

#include "serving/endpoint.h"
#include "serving/model_metadata.h"

namespace dtrain::serve {

// Loads the weights dtrain-mnist saved (model.pt) onto `device` (one that
// vision::inference::check_device accepted). Throws serving::ModelError
// naming the file when they are not the network's.
std::unique_ptr<serving::Endpoint> make_mnist_endpoint(const serving::ModelMetadata& model, const std::string& device);

}  // namespace dtrain::serve
