"""The peer of dtrain-bench-maskrcnn-scaling: torchvision's MaskRCNN built as
configs/mask_rcnn_R_18_FPN_cpu_shapes.yaml builds dtrain's (ResNet-18 FPN with 64 channels,
per-rank BatchNorm, anchors 8..128, thin heads, 128-192 px), trained data-parallel through
PyTorch's DistributedDataParallel over Gloo on synthetic shapes images, 2 per rank.

    python3 maskrcnn_ddp.py prepare WORKDIR      # writes WORKDIR/weights.pth and inputs.pth
    python3 maskrcnn_ddp.py train WORKDIR --ranks 2 [--warmup 3] [--steps 20] [--threads 1]

Both programs start from the same weights and train on the same images; rank 0 prints the
images/s of all ranks.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torchvision.models import resnet18
from torchvision.models.detection import MaskRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.models.detection.mask_rcnn import MaskRCNNHeads, MaskRCNNPredictor
from torchvision.models.detection.rpn import RPNHead
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

from ddp_timing import seconds_for_steps

IMAGES_PER_RANK = 2


def build_model():
    body = resnet18(weights=None, norm_layer=torch.nn.BatchNorm2d)
    backbone = BackboneWithFPN(body, return_layers={"layer1": "0", "layer2": "1", "layer3": "2", "layer4": "3"},
                               in_channels_list=[64, 128, 256, 512], out_channels=64,
                               extra_blocks=LastLevelMaxPool())
    anchors = AnchorGenerator(sizes=((8,), (16,), (32,), (64,), (128,)), aspect_ratios=((0.5, 1.0, 2.0),) * 5)
    return MaskRCNN(backbone, num_classes=None, min_size=128, max_size=192,
                    rpn_anchor_generator=anchors, rpn_head=RPNHead(64, 3),
                    rpn_pre_nms_top_n_train=600, rpn_pre_nms_top_n_test=300,
                    rpn_post_nms_top_n_train=300, rpn_post_nms_top_n_test=100,
                    rpn_batch_size_per_image=128, box_batch_size_per_image=128, box_detections_per_img=20,
                    box_head=TwoMLPHead(64 * 7 * 7, 256), box_predictor=FastRCNNPredictor(256, 4),
                    mask_head=MaskRCNNHeads(64, (64, 64), 1), mask_predictor=MaskRCNNPredictor(64, 64, 4))


def synthetic_images(count, generator):
    """Shapes-like scenes: 128 x 170 images with 1-3 filled rectangles each."""
    images, targets = [], []
    for _ in range(count):
        image = torch.rand(3, 128, 170, generator=generator) * 0.2
        boxes, masks = [], []
        for _ in range(int(torch.randint(1, 4, (1,), generator=generator))):
            x1, y1 = [int(v) for v in torch.randint(0, 100, (2,), generator=generator)]
            w, h = [int(v) for v in torch.randint(12, 48, (2,), generator=generator)]
            x2, y2 = min(x1 + w, 170), min(y1 + h, 128)
            image[:, y1:y2, x1:x2] += torch.rand(3, 1, 1, generator=generator)
            mask = torch.zeros(128, 170, dtype=torch.uint8)
            mask[y1:y2, x1:x2] = 1
            boxes.append([float(x1), float(y1), float(x2), float(y2)])
            masks.append(mask)
        images.append(image.clamp(0, 1))
        targets.append({"boxes": torch.tensor(boxes),
                        "labels": torch.randint(1, 4, (len(boxes),), generator=generator),
                        "masks": torch.stack(masks)})
    return images, targets


def prepare(workdir, ranks):
    torch.manual_seed(0)
    torch.save(build_model().state_dict(), f"{workdir}/weights.pth")
    images, targets = synthetic_images(IMAGES_PER_RANK * ranks, torch.Generator().manual_seed(1))
    inputs = {}
    for i, (image, target) in enumerate(zip(images, targets)):
        inputs[f"image{i}"] = image
        for key, value in target.items():
            inputs[f"target{i}_{key}"] = value
    torch.save(inputs, f"{workdir}/inputs.pth")


def train(rank, args):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    model = build_model()
    model.load_state_dict(torch.load(f"{args.workdir}/weights.pth"))
    inputs = torch.load(f"{args.workdir}/inputs.pth")
    mine = range(rank * IMAGES_PER_RANK, (rank + 1) * IMAGES_PER_RANK)
    images = [inputs[f"image{i}"] for i in mine]
    targets = [{key: inputs[f"target{i}_{key}"] for key in ("boxes", "labels", "masks")} for i in mine]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    sgd = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
    ddp.train()

    def step():
        sgd.zero_grad()
        sum(ddp(images, targets).values()).backward()
        sgd.step()

    seconds = seconds_for_steps(step, args.warmup, args.steps)
    if rank == 0:
        print(f"maskrcnn-shapes ddp ranks={args.ranks} steps={args.steps}: "
              f"{IMAGES_PER_RANK * args.ranks * args.steps / seconds:.2f} images/s", flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["prepare", "train"])
    parser.add_argument("workdir")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--port", type=int, default=29534)
    args = parser.parse_args()
    if args.mode == "prepare":
        prepare(args.workdir, args.ranks)
    else:
        mp.spawn(train, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
