#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "vision/data/synthetic_coco_writer.h"
#include "vision/data/transforms.h"

namespace dtrain::vision {

// `dtrain data make-shapes`: images with one to four coloured squares,
// circles and triangles (category ids 1, 2, 3) on a random solid, gradient or
// noise background. Later shapes occlude earlier ones; each instance's mask
// is only its visible part, traced into polygon(s) that COCO's rasteriser
// turns back into exactly those pixels. Instances left with a tiny visible
// part, or whose visible part has a hole (a polygon cannot leave it out),
// are dropped and the image is drawn without them, so the masks of one
// image never overlap.
void make_shapes_dataset(const SyntheticSpec& spec);
SyntheticImage generate_shapes_image(uint32_t height, uint32_t width, uint64_t seed);
std::vector<CocoCategory> shape_categories();

// Shared by the generators.
// Fills the image with a random solid colour, a linear gradient between two
// colours, or per-pixel noise around a colour; returns its mean colour.
std::array<int, 3> paint_background(RgbImage& image, SampleRng& rng);
// A colour at least `distance` (sum over channels) away from `avoid`.
std::array<uint8_t, 3> contrasting_colour(SampleRng& rng, const std::array<int, 3>& avoid, int distance);
// The instance of a row-major visible mask as polygons when `polygons`,
// else as a compressed RLE; area and box from the mask COCO will rasterise.
// nullopt when polygons cannot reproduce the mask exactly (it has a hole).
std::optional<SyntheticInstance> instance_from_mask(std::span<const uint8_t> mask, uint32_t height, uint32_t width,
                                                    int64_t category_id, bool polygons);

}  // namespace dtrain::vision
