// Request bodies of dtrain serve's endpoints (apps/serve/*_payload.h): Mask R-CNN's JSON with a
// base64 image, or the image itself; MNIST's JSON arrays or PNG. The first byte picks the
// endpoint and content type; every refusal must be the endpoint's own InvocationError.
#include <string>

#include "apps/serve/maskrcnn_payload.h"
#include "apps/serve/mnist_payload.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  static const char* const kContentTypes[] = {"application/json", "image/png", "image/jpeg", ""};
  dtrain::serving::InvocationRequest request;
  request.content_type = kContentTypes[(data[0] >> 1) % 4];
  request.body = std::string(dtrain::fuzz::as_text(data + 1, size - 1));
  dtrain::fuzz::expect_clean_errors([&] {
    if (data[0] % 2 == 0) {
      dtrain::serve::decode_maskrcnn_request(request, std::uint64_t{4096} * 4096);
    } else {
      dtrain::serve::decode_mnist_request(request);
    }
  });
  return 0;
}
