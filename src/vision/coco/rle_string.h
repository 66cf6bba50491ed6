#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// COCO's compact text form of RLE counts (the "counts" string of a
// compressed RLE). Each count is written as a variable-length signed number,
// five bits per character with a continuation bit, offset into the printable
// range '0'..'o'. From the fourth count on, the difference to the count two
// places earlier is written instead of the count itself, which keeps the
// strings of smooth shapes short. The output is byte-for-byte what the COCO
// API produces.
std::string rle_counts_to_string(const RunLengthMask& mask);

// Parses a counts string into a mask of the given size. Throws CocoError
// for characters outside '0'..'o' or a string that ends inside a number.
RunLengthMask rle_from_counts_string(std::string_view counts, uint32_t height, uint32_t width);

}  // namespace dtrain::vision
