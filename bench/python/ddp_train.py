"""Images/s of data-parallel training through PyTorch's DistributedDataParallel over a
torch.distributed backend (dtrain's, Gloo, ...), for torchvision's ResNet-50 or Mask R-CNN
(maskrcnn_resnet50_fpn) on synthetic images; or of one process training alone (``--alone``: no
process group, no DDP), for the ceiling that two independent processes set.
``bench/python/ddp_train`` runs all three in turns.

    # ranks started as torchrun starts them (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK)
    python3 ddp_train.py --model resnet50 --backend dtrain [--batch-size 8] [--image-size 224]
    python3 ddp_train.py --model maskrcnn --backend gloo --image-size 320 --batch-size 2
    python3 ddp_train.py --model resnet50 --alone --images-of-rank 1   # rank 1's images, alone

Every process builds the model from the same seed and draws its own images (ResNet-50: random
pixels and labels; Mask R-CNN: 1-3 random boxes per image, each with its filled mask and a
random class), once, before the clock starts. DDP is used as a PyTorch user uses it, with its
defaults (buffers such as BatchNorm's statistics broadcast from rank 0 at each forward). The time
is that of ``--steps`` steps after ``--warmup`` untimed ones, between two barriers; rank 0 (or
the lone process) prints ``... images_per_s=N``, the images of all ranks per second.
"""
import argparse
import json
import os
import time
from typing import Callable, Dict, List, Tuple

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.nn.parallel import DistributedDataParallel

import dtrain.torch  # noqa: F401  registers the "dtrain" backend

MODELS = ("resnet50", "maskrcnn")
IMAGENET_CLASSES = 1000
COCO_CLASSES = 91  # maskrcnn_resnet50_fpn's default head: background and 90 categories

Targets = List[Dict[str, torch.Tensor]]


def build_model(name: str, image_size: int) -> nn.Module:
    """torchvision's ``name`` with fresh weights (the caller seeds the generator)."""
    if name == "resnet50":
        return torchvision.models.resnet50(weights=None)
    # Square inputs of image_size pass the transform unresized (its default would scale them to 800).
    return torchvision.models.detection.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, num_classes=COCO_CLASSES, min_size=image_size, max_size=image_size)


def classification_batch(batch: int, image_size: int,
                         generator: torch.Generator) -> Tuple[torch.Tensor, torch.Tensor]:
    """Random standardised pixels [batch, 3, size, size] and random ImageNet labels [batch]."""
    images = torch.randn(batch, 3, image_size, image_size, generator=generator)
    labels = torch.randint(0, IMAGENET_CLASSES, (batch,), generator=generator)
    return images, labels


def detection_batch(batch: int, image_size: int, generator: torch.Generator) -> Tuple[List[torch.Tensor], Targets]:
    """``batch`` images in [0, 1] with 1-3 brightened boxes each, and their boxes, labels and masks."""
    images, targets = [], []
    low, high = max(4, image_size // 10), max(5, image_size // 3)  # box sides
    for _ in range(batch):
        image = torch.rand(3, image_size, image_size, generator=generator) * 0.3
        boxes, masks = [], []
        for _ in range(int(torch.randint(1, 4, (1,), generator=generator))):
            w, h = (int(v) for v in torch.randint(low, high, (2,), generator=generator))
            x1 = int(torch.randint(0, image_size - w, (1,), generator=generator))
            y1 = int(torch.randint(0, image_size - h, (1,), generator=generator))
            image[:, y1:y1 + h, x1:x1 + w] += 0.7 * torch.rand(3, 1, 1, generator=generator)
            mask = torch.zeros(image_size, image_size, dtype=torch.uint8)
            mask[y1:y1 + h, x1:x1 + w] = 1
            boxes.append([float(x1), float(y1), float(x1 + w), float(y1 + h)])
            masks.append(mask)
        images.append(image.clamp(0, 1))
        targets.append({"boxes": torch.tensor(boxes),
                        "labels": torch.randint(1, COCO_CLASSES, (len(boxes),), generator=generator),
                        "masks": torch.stack(masks)})
    return images, targets


def training_step(name: str, model: nn.Module, optimizer: torch.optim.Optimizer, batch: int, image_size: int,
                  generator: torch.Generator, device: torch.device) -> Callable[[], None]:
    """One SGD step of ``model`` on a fixed synthetic batch, as a function."""
    if name == "resnet50":
        images, labels = (t.to(device) for t in classification_batch(batch, image_size, generator))

        def loss() -> torch.Tensor:
            return F.cross_entropy(model(images), labels)
    else:
        images, targets = detection_batch(batch, image_size, generator)
        images = [image.to(device) for image in images]
        targets = [{key: value.to(device) for key, value in target.items()} for target in targets]

        def loss() -> torch.Tensor:
            return sum(model(images, targets).values())

    def step() -> None:
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()

    return step


def seconds_for_steps(step: Callable[[], None], warmup: int, steps: int, distributed: bool,
                      device: torch.device) -> float:
    """Seconds of ``steps`` steps after ``warmup`` untimed ones; with ranks, between two barriers."""

    def settle() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if distributed:
            dist.barrier()

    for _ in range(warmup):
        step()
    settle()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    settle()
    return time.perf_counter() - start


def parse_args() -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=MODELS, default="resnet50",
                        help="resnet50, or maskrcnn (maskrcnn_resnet50_fpn) (default: resnet50)")
    parser.add_argument("--backend", default="dtrain",
                        help='torch.distributed backend: "dtrain", "gloo", "nccl" (default: dtrain)')
    parser.add_argument("--alone", action="store_true",
                        help="train in this process alone: no process group, no DDP")
    parser.add_argument("--images-of-rank", type=int, default=0, metavar="R",
                        help="with --alone: draw the images rank R draws in a job (default: 0)")
    parser.add_argument("--batch-size", type=int, default=None, metavar="N",
                        help="images per rank per step (default: 8 for resnet50, 2 for maskrcnn)")
    parser.add_argument("--image-size", type=int, default=None, metavar="PX",
                        help="side of the square images (default: 224 for resnet50, 320 for maskrcnn)")
    parser.add_argument("--steps", type=int, default=10, help="timed steps (default: 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps before them (default: 2)")
    parser.add_argument("--lr", type=float, default=0.01, help="SGD learning rate (momentum 0.9) (default: 0.01)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per process (default: 1)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="cuda takes the GPU of LOCAL_RANK (alone: of --images-of-rank) (default: cpu)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and images (default: 0)")
    parser.add_argument("--json", help="append the result as a JSON line to this file (rank 0)")
    args = parser.parse_args()
    if args.batch_size is None:
        args.batch_size = 8 if args.model == "resnet50" else 2
    if args.image_size is None:
        args.image_size = 224 if args.model == "resnet50" else 320
    return args


def main() -> None:
    """Trains for the warmup and timed steps and prints the images/s on rank 0."""
    args = parse_args()
    torch.set_num_threads(args.threads)
    if args.alone:
        rank, ranks, shard = 0, 1, args.images_of_rank
    else:
        # init_method env://: MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE come from the launcher.
        dist.init_process_group(backend=args.backend)
        rank, ranks = dist.get_rank(), dist.get_world_size()
        shard = rank
    if args.device == "cuda":
        # Ranks share the GPUs there are (the GPU machine has one).
        index = (shard if args.alone else int(os.environ.get("LOCAL_RANK", 0))) % torch.cuda.device_count()
        torch.cuda.set_device(index)
        device = torch.device("cuda", index)
    else:
        device = torch.device("cpu")

    torch.manual_seed(args.seed)  # the same weights in every process
    model = build_model(args.model, args.image_size).to(device)
    if not args.alone:
        model = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    images = torch.Generator().manual_seed(args.seed + 1 + shard)  # each rank its own images
    step = training_step(args.model, model, optimizer, args.batch_size, args.image_size, images, device)

    seconds = seconds_for_steps(step, args.warmup, args.steps, not args.alone, device)
    images_per_s = args.batch_size * ranks * args.steps / seconds
    side = "alone" if args.alone else f"ddp backend={args.backend}"
    if rank == 0:
        print(f"{args.model} {side} ranks={ranks} batch={args.batch_size} image={args.image_size} "
              f"steps={args.steps} seconds={seconds:.3f}: images_per_s={images_per_s:.3f}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({
                    "bench": "ddp_train", "model": args.model, "backend": None if args.alone else args.backend,
                    "alone": args.alone, "ranks": ranks, "batch_per_rank": args.batch_size,
                    "image_size": args.image_size, "steps": args.steps, "warmup": args.warmup,
                    "threads": args.threads, "device": args.device, "seconds": seconds,
                    "images_per_s": images_per_s}) + "\n")
    if not args.alone:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
