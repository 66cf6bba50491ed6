#pragma once

// The Mask R-CNN endpoint's wire format, without LibTorch.
//
// Request: a JPEG or PNG as image/jpeg or image/png, or application/json
// {"image": "<base64 JPEG or PNG>", "score_threshold": 0.5}. The threshold
// can also come as the query parameter or SageMaker custom attribute
// score_threshold; default 0: every detection the model's own
// ROI_HEADS.SCORE_THRESH_TEST lets through.
// Response: {"width": W, "height": H, "detections": [{"category_id": 3,
// "category_name": "triangle", "score": 0.98, "bbox": [x, y, width, height],
// "segmentation": {"size": [H, W], "counts": "<COCO compressed RLE>"}}, ...]}
// by descending score; bbox and segmentation as in COCO results files.
#include <cstdint>
#include <string>
#include <vector>

#include "vision/inference/image_detections.h"
#include "serving/invocation.h"
#include "serving/model_metadata.h"
#include "vision/data/image.h"

namespace dtrain::serve {

struct MaskRcnnRequest {
  vision::RgbImage image;
  double score_threshold = 0;
};

// Throws serving::InvocationError: 415 for another content type; 400 for
// an undecodable image, bad base64, JSON without "image" or with a bad
// threshold; 413 for an image of more than `max_pixels` pixels (checked in
// its header, before decoding).
MaskRcnnRequest decode_maskrcnn_request(const serving::InvocationRequest& request, uint64_t max_pixels);

// The model's label l is categories[l - 1] (labels 1..K, as the trainer maps
// the training set's categories in id order).
std::string encode_maskrcnn_response(const vision::inference::ImageDetections& detections,
                                     const std::vector<serving::Category>& categories, double score_threshold);

}  // namespace dtrain::serve
