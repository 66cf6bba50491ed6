// A COCO instances file (vision/data/coco_dataset.h): images, annotations with polygons or
// RLE, categories, read before training or evaluation.
#include "tests/fuzz/fuzz_target.h"
#include "vision/data/coco_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dtrain::fuzz::expect_clean_errors([&] {
    dtrain::vision::CocoDataset::parse(dtrain::fuzz::as_text(data, size), "fuzz.json", "/nonexistent-images");
  });
  return 0;
}
