// JPEG and PNG decoding (vision/data/image_codec.h): COCO's images and serving request bodies.
#include <span>

#include "tests/fuzz/fuzz_target.h"
#include "vision/data/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  dtrain::fuzz::expect_clean_errors([&] { dtrain::vision::read_image_dimensions(bytes, "fuzz input"); });
  dtrain::fuzz::expect_clean_errors([&] { dtrain::vision::decode_image(bytes, "fuzz input"); });
  return 0;
}
