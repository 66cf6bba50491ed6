#include "vision/config/maskrcnn_defaults.h"

namespace dtrain::vision::config {

namespace {

void define_model(Config& c) {
  c.define("MODEL.META_ARCHITECTURE", std::string("GeneralizedRCNN"));
  c.define("MODEL.WEIGHTS", std::string());  // a checkpoint to start from; "" for none
  c.define("MODEL.MASK_ON", true);
  // float32, or float64 for exact reproducibility checks (data-parallel
  // equivalence): float32 rounding flips proposal ranks within a few steps.
  c.define("MODEL.PRECISION", std::string("float32"));
  c.define("MODEL.DEVICE", std::string("cpu"));  // or cuda: cuda:LOCAL_RANK (docs/gpu.md)
  // Convolution weights and images in NHWC, the layout tensor cores and oneDNN prefer.
  c.define("MODEL.CHANNELS_LAST", false);
  c.define("MODEL.ALLOW_TF32", true);  // cuDNN's float32 convolutions in TF32, PyTorch's default
  // torchvision normalises RGB in the 0..1 range (Detectron2 uses 0..255 BGR).
  c.define("MODEL.PIXEL_MEAN", FloatList{0.485, 0.456, 0.406});
  c.define("MODEL.PIXEL_STD", FloatList{0.229, 0.224, 0.225});

  c.define("MODEL.RESNETS.DEPTH", int64_t{50});
  c.define("MODEL.RESNETS.TRAINABLE_LAYERS", int64_t{3});
  c.define("MODEL.RESNETS.NORM", std::string("FrozenBN"));
  c.define("MODEL.FPN.OUT_CHANNELS", int64_t{256});

  c.define("MODEL.ANCHOR_GENERATOR.SIZES", FloatListList{{32}, {64}, {128}, {256}, {512}});
  c.define("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS", FloatListList{{0.5, 1.0, 2.0}});

  c.define("MODEL.RPN.PRE_NMS_TOPK_TRAIN", int64_t{2000});
  c.define("MODEL.RPN.PRE_NMS_TOPK_TEST", int64_t{1000});
  c.define("MODEL.RPN.POST_NMS_TOPK_TRAIN", int64_t{2000});
  c.define("MODEL.RPN.POST_NMS_TOPK_TEST", int64_t{1000});
  c.define("MODEL.RPN.NMS_THRESH", 0.7);
  c.define("MODEL.RPN.FG_IOU_THRESH", 0.7);
  c.define("MODEL.RPN.BG_IOU_THRESH", 0.3);
  c.define("MODEL.RPN.BATCH_SIZE_PER_IMAGE", int64_t{256});
  c.define("MODEL.RPN.POSITIVE_FRACTION", 0.5);
  c.define("MODEL.RPN.SCORE_THRESH", 0.0);

  c.define("MODEL.ROI_HEADS.NUM_CLASSES", int64_t{91});  // background included, as torchvision
  c.define("MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE", int64_t{512});
  c.define("MODEL.ROI_HEADS.POSITIVE_FRACTION", 0.25);
  c.define("MODEL.ROI_HEADS.FG_IOU_THRESH", 0.5);
  c.define("MODEL.ROI_HEADS.BG_IOU_THRESH", 0.5);
  c.define("MODEL.ROI_HEADS.SCORE_THRESH_TEST", 0.05);
  c.define("MODEL.ROI_HEADS.NMS_THRESH_TEST", 0.5);
  c.define("MODEL.ROI_HEADS.DETECTIONS_PER_IMAGE", int64_t{100});

  c.define("MODEL.ROI_BOX_HEAD.POOLER_RESOLUTION", int64_t{7});
  c.define("MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO", int64_t{2});
  c.define("MODEL.ROI_BOX_HEAD.FC_DIM", int64_t{1024});
  c.define("MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS", FloatList{10.0, 10.0, 5.0, 5.0});

  c.define("MODEL.ROI_MASK_HEAD.POOLER_RESOLUTION", int64_t{14});
  c.define("MODEL.ROI_MASK_HEAD.POOLER_SAMPLING_RATIO", int64_t{2});
  c.define("MODEL.ROI_MASK_HEAD.CONV_DIM", int64_t{256});
  c.define("MODEL.ROI_MASK_HEAD.NUM_CONV", int64_t{4});
}

void define_input_and_data(Config& c) {
  c.define("INPUT.MIN_SIZE_TRAIN", IntList{800});  // one is drawn per batch
  c.define("INPUT.MAX_SIZE_TRAIN", int64_t{1333});
  c.define("INPUT.MIN_SIZE_TEST", int64_t{800});
  c.define("INPUT.MAX_SIZE_TEST", int64_t{1333});
  c.define("INPUT.SIZE_DIVISIBILITY", int64_t{32});

  c.define("DATASETS.TRAIN_ANNOTATIONS", std::string());
  c.define("DATASETS.TRAIN_IMAGES", std::string());
  c.define("DATASETS.TEST_ANNOTATIONS", std::string());
  c.define("DATASETS.TEST_IMAGES", std::string());

  c.define("DATALOADER.NUM_WORKERS", int64_t{2});
  c.define("DATALOADER.ASPECT_RATIO_GROUPING", true);
}

void define_solver(Config& c) {
  c.define("SOLVER.IMS_PER_BATCH", int64_t{16});  // over all workers, as Detectron2
  c.define("SOLVER.BASE_LR", 0.02);
  c.define("SOLVER.LR_SCHEDULER_NAME", std::string("WarmupMultiStepLR"));  // or "WarmupCosineLR"
  c.define("SOLVER.BASE_LR_END", 0.0);                                     // where WarmupCosineLR ends
  c.define("SOLVER.MOMENTUM", 0.9);
  c.define("SOLVER.WEIGHT_DECAY", 0.0001);
  c.define("SOLVER.MAX_ITER", int64_t{90000});
  c.define("SOLVER.STEPS", IntList{60000, 80000});
  c.define("SOLVER.GAMMA", 0.1);
  c.define("SOLVER.WARMUP_ITERS", int64_t{1000});
  c.define("SOLVER.WARMUP_FACTOR", 0.001);
  c.define("SOLVER.CHECKPOINT_PERIOD", int64_t{5000});
  c.define("SOLVER.LOG_PERIOD", int64_t{20});
  // Detectron2's automatic scaling: with a reference world size, a job of
  // another size scales IMS_PER_BATCH and BASE_LR by world/reference and the
  // iteration counts by reference/world (the same epochs, linear LR rule).
  c.define("SOLVER.REFERENCE_WORLD_SIZE", int64_t{0});
  c.define("SOLVER.ELASTIC.ENABLED", false);  // an elastic job (`dtrain run --min-np`, docs/elastic.md)
  c.define("SOLVER.ELASTIC.COMMIT_PERIOD", int64_t{10});
  // Mixed precision (docs/gpu.md): the networks under autocast; float16 (GPU only) with dynamic
  // loss scaling, bfloat16 (GPU or CPU) without.
  c.define("SOLVER.AMP.ENABLED", false);
  c.define("SOLVER.AMP.DTYPE", std::string("float16"));
  // Gradients on the wire in half the bytes (Horovod's Compression.fp16, and bfloat16): float32
  // gradients of at least MIN_BYTES travel and are summed in DTYPE ("float16" or "bfloat16").
  c.define("SOLVER.GRADIENT_COMPRESSION.ENABLED", false);
  c.define("SOLVER.GRADIENT_COMPRESSION.DTYPE", std::string("bfloat16"));
  c.define("SOLVER.GRADIENT_COMPRESSION.MIN_BYTES", int64_t{0});
  // PowerSGD (DDP's powerSGD_hook): weight gradients travel as rank-RANK factors with error
  // feedback once START_STEP steps were reduced exactly; 0 is off. Not with GRADIENT_COMPRESSION.
  c.define("SOLVER.POWER_SGD.RANK", int64_t{0});
  c.define("SOLVER.POWER_SGD.START_STEP", int64_t{0});
  c.define("SOLVER.CLIP_GRADIENTS.ENABLED", false);
  c.define("SOLVER.CLIP_GRADIENTS.CLIP_TYPE", std::string("value"));  // "value" or "norm"
  c.define("SOLVER.CLIP_GRADIENTS.CLIP_VALUE", 1.0);
  c.define("SOLVER.CLIP_GRADIENTS.NORM_TYPE", 2.0);

  c.define("TEST.EVAL_PERIOD", int64_t{0});  // 0: evaluation at the end only, as Detectron2
  c.define("OUTPUT_DIR", std::string("./output"));
  c.define("SEED", int64_t{-1});  // negative: a different seed every run, as Detectron2
}

}  // namespace

Config maskrcnn_defaults() {
  Config config;
  define_model(config);
  define_input_and_data(config);
  define_solver(config);
  return config;
}

}  // namespace dtrain::vision::config
