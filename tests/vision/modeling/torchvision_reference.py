"""Writes a torchvision Mask R-CNN reference for dtrain's parity test.

Usage: torchvision_reference.py OUT_DIR DEPTH NUM_CLASSES [DEVICE]

Builds torchvision's MaskRCNN (ResNet-DEPTH FPN, frozen batch norm) with
seeded random weights, then writes to OUT_DIR:
  weights.pth  the state dict (torch.save, as published checkpoints are)
  weights_legacy.pth  the same under torchvision < 0.13's key names
  inputs.pth   two images of different sizes and their training targets
  outputs.pth  inference detections, training losses (with a seed set just
               before the training forward) and a few gradients
The C++ test loads the same weights and inputs, seeds LibTorch's generator
the same way and compares. With DEVICE cuda the weights and inputs are the
same (made on the CPU), the detections are torchvision's on the GPU (TF32
off), and there are no training outputs: on a GPU torchvision draws its
samples from the GPU's generator, which dtrain does not reproduce.
"""
import collections
import re
import sys

import torch
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
from torchvision.ops.misc import FrozenBatchNorm2d

out_dir, depth, num_classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
device = torch.device(sys.argv[4] if len(sys.argv) > 4 else "cpu")
torch.set_num_threads(1)
torch.manual_seed(0)

backbone = resnet_fpn_backbone(backbone_name=f"resnet{depth}", weights=None, norm_layer=FrozenBatchNorm2d,
                               trainable_layers=3)
model = MaskRCNN(backbone, num_classes=num_classes, min_size=160, max_size=256, box_score_thresh=0.05,
                 rpn_pre_nms_top_n_test=300, rpn_post_nms_top_n_test=200, rpn_pre_nms_top_n_train=600,
                 rpn_post_nms_top_n_train=300, box_batch_size_per_image=128, rpn_batch_size_per_image=128)
generator = torch.Generator().manual_seed(1)
images = [torch.rand(3, 180, 240, generator=generator), torch.rand(3, 200, 150, generator=generator)]


def calibrate(module, inputs):
    # Like a trained network's: each frozen batch norm normalises what it
    # actually sees, then applies a random affine. Without this the random
    # network's activations grow to thousands and amplify float rounding.
    x = inputs[0]
    module.running_mean.copy_(x.mean(dim=(0, 2, 3)))
    module.running_var.copy_(x.var(dim=(0, 2, 3)))


with torch.no_grad():
    for module in model.modules():
        if isinstance(module, FrozenBatchNorm2d):
            module.weight.uniform_(0.5, 1.5)
            module.bias.uniform_(-0.2, 0.2)
    hooks = [m.register_forward_pre_hook(calibrate) for m in model.modules() if isinstance(m, FrozenBatchNorm2d)]
    model.eval()
    model.backbone(model.transform([image.clone() for image in images])[0].tensors)
    for hook in hooks:
        hook.remove()
    # Spread the class scores and objectness of the random model over (0, 1)
    # so that detections pass the score threshold and their order is no tie.
    model.roi_heads.box_predictor.cls_score.weight.mul_(5.0)
    model.rpn.head.cls_logits.weight.mul_(5.0)
torch.save(model.state_dict(), f"{out_dir}/weights.pth")


def legacy_name(key):
    # The names torchvision < 0.13 saved (what older published checkpoints carry).
    for block in ("inner_blocks", "layer_blocks"):
        key = re.sub(rf"backbone\.fpn\.{block}\.(\d+)\.0\.", rf"backbone.fpn.{block}.\1.", key)
    key = key.replace("rpn.head.conv.0.0.", "rpn.head.conv.")
    return re.sub(r"roi_heads\.mask_head\.(\d+)\.0\.",
                  lambda m: f"roi_heads.mask_head.mask_fcn{int(m.group(1)) + 1}.", key)


torch.save(collections.OrderedDict((legacy_name(k), v) for k, v in model.state_dict().items()),
           f"{out_dir}/weights_legacy.pth")

targets = []
for image, count in zip(images, (3, 1)):
    h, w = image.shape[1:]
    boxes, masks = [], []
    for _ in range(count):
        x1 = float(torch.randint(0, w // 2, (1,), generator=generator))
        y1 = float(torch.randint(0, h // 2, (1,), generator=generator))
        x2 = x1 + float(torch.randint(20, w // 2, (1,), generator=generator))
        y2 = y1 + float(torch.randint(20, h // 2, (1,), generator=generator))
        boxes.append([x1, y1, x2, y2])
        mask = torch.zeros(h, w, dtype=torch.uint8)
        mask[int(y1):int(y2), int(x1):int(x2)] = 1
        masks.append(mask)
    labels = torch.randint(1, num_classes, (count,), generator=generator)
    targets.append({"boxes": torch.tensor(boxes), "labels": labels, "masks": torch.stack(masks)})

inputs = {}
for i, (image, target) in enumerate(zip(images, targets)):
    inputs[f"image{i}"] = image
    for key, value in target.items():
        inputs[f"target{i}_{key}"] = value
torch.save(inputs, f"{out_dir}/inputs.pth")

outputs = {}
model.eval()
if device.type == "cuda":
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    model.to(device)
with torch.no_grad():
    detections = model([image.clone().to(device) for image in images])
for i, d in enumerate(detections):
    for key, value in d.items():
        outputs[f"detections{i}_{key}"] = value.cpu()
if device.type == "cuda":
    torch.save(outputs, f"{out_dir}/outputs.pth")
    sys.exit(0)

model.train()
torch.manual_seed(7)
losses = model([image.clone() for image in images], [{k: v.clone() for k, v in t.items()} for t in targets])
for key, value in losses.items():
    outputs[key] = value.detach()
sum(losses.values()).backward()
for name in ("roi_heads.box_predictor.cls_score.weight", "roi_heads.mask_predictor.mask_fcn_logits.weight",
             "rpn.head.conv.0.0.weight", "backbone.fpn.layer_blocks.0.0.weight", "backbone.body.layer4.0.conv1.weight"):
    outputs[f"grad.{name}"] = dict(model.named_parameters())[name].grad
torch.save(outputs, f"{out_dir}/outputs.pth")
