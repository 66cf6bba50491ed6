// Base64 in serving requests (images in JSON bodies). What decodes must survive a round trip.
#include <cstdlib>

#include "serving/base64.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dtrain::fuzz::expect_clean_errors([&] {
    const std::vector<std::uint8_t> decoded = dtrain::serving::decode_base64(dtrain::fuzz::as_text(data, size));
    const std::string encoded = dtrain::serving::encode_base64(decoded.data(), decoded.size());
    if (dtrain::serving::decode_base64(encoded) != decoded) std::abort();  // the round trip lost bytes
  });
  return 0;
}
