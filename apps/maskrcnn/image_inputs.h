#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace dtrain::maskrcnn {

// One image to run on, with the names of what predict writes for it.
struct InputImage {
  std::filesystem::path path;
  std::string stem;  // file name without extension: <stem>.json, <stem>.png
  // The stem's number when it is all digits (COCO names files after their
  // image id: 000000397133.jpg), otherwise the image's index in sorted order.
  int64_t image_id = 0;
};

// `input` as a file (taken whatever its extension; decoding decides whether
// it is an image) or a directory: its *.jpg, *.jpeg and *.png files, any
// case of the extension, sorted by name, not recursing. Throws UsageError
// when `input` does not exist, a directory holds no such image, or two
// images share a stem (their outputs would collide).
std::vector<InputImage> list_input_images(const std::string& input);

// The image id predict assigns to a file with this stem at `index`.
int64_t image_id_for(const std::string& stem, size_t index);

}  // namespace dtrain::maskrcnn
