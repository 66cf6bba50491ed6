#pragma once

// COCO's mask API in plain C++: run-length masks, their compact string form,
// rasterizing polygons and boxes, merging and IoU. Every function gives the
// same counts, strings and numbers as pycocotools.
#include "vision/evaluation/bounding_box.h"
#include "vision/evaluation/mask_iou.h"
#include "vision/evaluation/polygon_rasterizer.h"
#include "vision/evaluation/rle_merge.h"
#include "vision/evaluation/rle_string.h"
#include "vision/evaluation/run_length_mask.h"
