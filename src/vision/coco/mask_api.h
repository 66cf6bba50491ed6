#pragma once

// COCO's mask API in plain C++: run-length masks, their compact string form,
// rasterizing polygons and boxes, merging and IoU. Every function gives the
// same counts, strings and numbers as pycocotools.
#include "vision/coco/bounding_box.h"
#include "vision/coco/mask_iou.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_merge.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/run_length_mask.h"
