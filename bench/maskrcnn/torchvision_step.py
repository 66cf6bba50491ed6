"""torchvision's side of `dtrain-bench-maskrcnn`: times Mask R-CNN R50-FPN training steps and
inference on the same images dtrain uses, on the CPU or a GPU, in float32 or mixed precision.

Usage: torchvision_step.py WORKDIR --threads T --steps S --score-threshold X
                           [--device cpu|cuda] [--images N] [--min-size M] [--amp off|float16|bfloat16]
                           [--channels-last]
Writes WORKDIR/weights.pth and WORKDIR/inputs.pth (the shared starting point) before measuring,
then prints one JSON line:
  {"train_step_s": fastest, "inference_s": fastest, "peak_rss_mb": ..., "peak_gpu_mb": ..., "detections": [...]}
"""
import argparse
import json
import resource
import time

import torch
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.misc import FrozenBatchNorm2d

parser = argparse.ArgumentParser()
parser.add_argument("workdir")
parser.add_argument("--threads", type=int, default=2)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--score-threshold", type=float, default=0.05)
parser.add_argument("--device", default="cpu")
parser.add_argument("--images", type=int, default=2)
parser.add_argument("--min-size", type=int, default=512)
parser.add_argument("--amp", default="off", choices=["off", "float16", "bfloat16"])
parser.add_argument("--channels-last", action="store_true")
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)
device = torch.device(args.device)
on_gpu = device.type == "cuda"
if on_gpu:
    # PyTorch's defaults: TF32 in cuDNN convolutions, not in matrix products.
    torch.backends.cudnn.benchmark = False

# Fine-tuning setup: frozen batch norm, the last three stages trainable.
# torchvision's default score threshold (0.05) leaves a random model without
# detections; a threshold of 0 makes inference run the mask head and mask
# pasting on the full 100 detections per image, as a trained model on a busy
# image does.
backbone = resnet_fpn_backbone(backbone_name="resnet50", weights=None, norm_layer=FrozenBatchNorm2d,
                               trainable_layers=3)
model = MaskRCNN(backbone, num_classes=91, min_size=args.min_size, max_size=1333,
                 box_score_thresh=args.score_threshold)
torch.save(model.state_dict(), f"{args.workdir}/weights.pth")

generator = torch.Generator().manual_seed(1)
images = [torch.rand(3, 480, 640, generator=generator) for _ in range(args.images)]
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
torch.save(inputs, f"{args.workdir}/inputs.pth")

model.to(device)
if args.channels_last:
    model.to(memory_format=torch.channels_last)
images = [image.to(device) for image in images]
targets = [{key: value.to(device) for key, value in target.items()} for target in targets]
amp_type = {"off": None, "float16": torch.float16, "bfloat16": torch.bfloat16}[args.amp]
# torchvision's reference training: autocast around the forward pass, GradScaler for float16.
scaler = None
if amp_type == torch.float16:
    scaler = torch.amp.GradScaler("cuda") if hasattr(torch.amp, "GradScaler") else torch.cuda.amp.GradScaler()


def autocast():
    return torch.autocast(device.type, dtype=amp_type, enabled=amp_type is not None)


def synchronize():
    if on_gpu:
        torch.cuda.synchronize(device)


params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.SGD(params, lr=1e-4, momentum=0.9)
model.train()
if on_gpu:
    torch.cuda.reset_peak_memory_stats(device)
train_times = []
for step in range(args.steps + 1):
    synchronize()
    start = time.perf_counter()
    with autocast():
        losses = model(images, targets)
    loss = sum(losses.values())
    optimizer.zero_grad()
    if scaler:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    else:
        loss.backward()
        optimizer.step()
    synchronize()
    if step > 0:  # the first step warms up allocators and kernels
        train_times.append(time.perf_counter() - start)
peak_gpu_mb = torch.cuda.max_memory_allocated(device) / 2**20 if on_gpu else 0.0

model.eval()
inference_times = []
with torch.no_grad():
    for step in range(args.steps + 1):
        synchronize()
        start = time.perf_counter()
        with autocast():
            detections = model(images)
        synchronize()
        if step > 0:
            inference_times.append(time.perf_counter() - start)

print(json.dumps({
    "train_step_s": min(train_times),
    "inference_s": min(inference_times),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    "peak_gpu_mb": peak_gpu_mb,
    "detections": [int(d["boxes"].shape[0]) for d in detections],
}))
