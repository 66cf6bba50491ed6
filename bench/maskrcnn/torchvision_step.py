"""torchvision's side of `dtrain-bench-maskrcnn`: times a Mask R-CNN R50-FPN
training step and an inference on the same images dtrain uses.

Usage: torchvision_step.py WORKDIR THREADS STEPS SCORE_THRESHOLD
Writes WORKDIR/weights.pth and WORKDIR/inputs.pth (the shared starting point)
before measuring, then prints one JSON line:
  {"train_step_s": fastest, "inference_s": fastest, "peak_rss_mb": ..., "detections": [...]}
"""
import json
import resource
import sys
import time

import torch
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.misc import FrozenBatchNorm2d

workdir, threads, steps, score_threshold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
torch.set_num_threads(threads)
torch.manual_seed(0)

# Fine-tuning setup: frozen batch norm, the last three stages trainable.
# torchvision's default score threshold (0.05) leaves a random model without
# detections; a threshold of 0 makes inference run the mask head and mask
# pasting on the full 100 detections per image, as a trained model on a busy
# image does.
backbone = resnet_fpn_backbone(backbone_name="resnet50", weights=None, norm_layer=FrozenBatchNorm2d,
                               trainable_layers=3)
model = MaskRCNN(backbone, num_classes=91, min_size=512, max_size=1333, box_score_thresh=score_threshold)
torch.save(model.state_dict(), f"{workdir}/weights.pth")

generator = torch.Generator().manual_seed(1)
images = [torch.rand(3, 480, 640, generator=generator) for _ in range(2)]
targets = []
for _ in images:
    boxes, masks = [], []
    for _ in range(4):
        x1, y1 = [float(v) for v in torch.randint(0, 320, (2,), generator=generator)]
        w, h = [float(v) for v in torch.randint(40, 160, (2,), generator=generator)]
        boxes.append([x1, y1, x1 + w, y1 + h])
        mask = torch.zeros(480, 640, dtype=torch.uint8)
        mask[int(y1):int(y1 + h), int(x1):int(x1 + w)] = 1
        masks.append(mask)
    targets.append({"boxes": torch.tensor(boxes), "labels": torch.randint(1, 91, (4,), generator=generator),
                    "masks": torch.stack(masks)})
inputs = {}
for i, (image, target) in enumerate(zip(images, targets)):
    inputs[f"image{i}"] = image
    for key, value in target.items():
        inputs[f"target{i}_{key}"] = value
torch.save(inputs, f"{workdir}/inputs.pth")

params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=1e-4, momentum=0.9)
model.train()
train_times = []
for step in range(steps + 1):
    start = time.perf_counter()
    losses = model(images, targets)
    optimizer.zero_grad()
    sum(losses.values()).backward()
    optimizer.step()
    if step > 0:  # the first step warms up allocators and kernels
        train_times.append(time.perf_counter() - start)

model.eval()
inference_times = []
with torch.no_grad():
    for step in range(steps + 1):
        start = time.perf_counter()
        detections = model(images)
        if step > 0:
            inference_times.append(time.perf_counter() - start)

print(json.dumps({
    "train_step_s": min(train_times),
    "inference_s": min(inference_times),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    "detections": [int(d["boxes"].shape[0]) for d in detections],
}))
