// COCO's compressed RLE counts strings (a segmentation's "counts" in annotation and result
// files). The first four bytes give the mask's height and width (as a file's "size" would).
#include <cstring>

#include "tests/fuzz/fuzz_target.h"
#include "vision/coco/rle_string.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  std::uint16_t height = 0, width = 0;
  std::memcpy(&height, data, 2);
  std::memcpy(&width, data + 2, 2);
  const std::string_view counts = dtrain::fuzz::as_text(data + 4, size - 4);
  dtrain::fuzz::expect_clean_errors([&] {
    const dtrain::vision::RunLengthMask mask = dtrain::vision::rle_from_counts_string(counts, height, width);
    dtrain::vision::rle_counts_to_string(mask);
  });
  return 0;
}
