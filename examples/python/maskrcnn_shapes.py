#!/usr/bin/env python3
"""Data-parallel Mask R-CNN on the synthetic shapes data set, written against horovod.torch.

torchvision's maskrcnn_resnet50_fpn, randomly initialised, learns to find and outline the
squares, circles and triangles that dtrain writes:

    scripts/shapes-data          # data/shapes: the main job's 1,600 training and 300 validation images
    export PYTHONPATH=$PWD/build/python
    build/apps/dtrain run -np 2 -- python3 examples/python/maskrcnn_shapes.py --iterations 300

Each rank reads its own shard of the training images; DistributedOptimizer averages the
gradients across ranks. Rank 0 prints the losses, averaged over the ranks, and images/s.
"""

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torchvision
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from torchvision.transforms.functional import pil_to_tensor

import dtrain.torch as hvd

# Where scripts/demo writes the data set, found from this file so any working directory works.
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "data" / "shapes"

Target = Dict[str, torch.Tensor]


class DatasetError(Exception):
    """The data set is missing or malformed."""


def polygon_mask(polygons: Sequence[Sequence[float]], height: int, width: int) -> np.ndarray:
    """Rasterises COCO polygons into a uint8 [height, width] mask.

    A pixel belongs to the mask when its centre lies inside one of the polygons (even-odd
    rule). The shapes data set traces pixel edges, so this reproduces its masks exactly.
    """
    mask = np.zeros((height, width), dtype=bool)
    for polygon in polygons:
        xy = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
        x0, y0 = xy[:, 0], xy[:, 1]
        x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
        # Horizontal edges cross no row of pixel centres.
        keep = y0 != y1
        x0, y0, x1, y1 = x0[keep], y0[keep], x1[keep], y1[keep]
        # Only the pixels in the polygon's bounding box can be inside it.
        left, right = max(0, int(np.floor(xy[:, 0].min()))), min(width, int(np.ceil(xy[:, 0].max())) + 1)
        top, bottom = max(0, int(np.floor(xy[:, 1].min()))), min(height, int(np.ceil(xy[:, 1].max())) + 1)
        if left >= right or top >= bottom or len(x0) == 0:
            continue
        ys, xs = np.mgrid[top:bottom, left:right]
        ys, xs = ys.reshape(1, -1), xs.reshape(1, -1)
        y0, y1, x0, x1 = (v[:, None] for v in (y0, y1, x0, x1))
        # Count, for every pixel centre, the edges crossed by a ray going right from it.
        spans_row = (y0 > ys) != (y1 > ys)
        crossing_x = x0 + (ys - y0) * (x1 - x0) / (y1 - y0)
        inside = ((spans_row & (xs < crossing_x)).sum(axis=0) % 2).astype(bool)
        mask[top:bottom, left:right] |= inside.reshape(bottom - top, right - left)
    return mask.astype(np.uint8)


class ShapesDataset(Dataset):
    """One split of a COCO-format instance segmentation data set, as torchvision's detection
    models take it: a float image in [0, 1] and a target with boxes, labels and masks."""

    def __init__(self, root: Path, split: str) -> None:
        annotations_file = root / "annotations" / f"instances_{split}.json"
        try:
            with open(annotations_file) as f:
                coco = json.load(f)
        except FileNotFoundError:
            raise DatasetError(
                f"{annotations_file} not found: write the data set with `scripts/shapes-data {root}`, "
                f"or pass --data") from None
        self.image_dir = root / split
        self.images = sorted(coco["images"], key=lambda image: image["id"])
        self.categories = {c["id"]: c["name"] for c in coco["categories"]}
        self.annotations: Dict[int, List[dict]] = defaultdict(list)
        for annotation in coco["annotations"]:
            # Crowd regions are stored as RLE and mark areas to ignore; nothing here trains on them.
            if not annotation.get("iscrowd", 0):
                self.annotations[annotation["image_id"]].append(annotation)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> Tuple[torch.Tensor, Target]:
        info = self.images[index]
        path = self.image_dir / info["file_name"]
        try:
            image = Image.open(path).convert("RGB")
        except FileNotFoundError:
            raise DatasetError(f"image {path} (listed in the annotations) not found") from None
        height, width = image.height, image.width
        annotations = self.annotations[info["id"]]
        boxes = [[x, y, x + w, y + h] for x, y, w, h in (a["bbox"] for a in annotations)]
        masks = [polygon_mask(a["segmentation"], height, width) for a in annotations]
        target = {
            "boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4),
            "labels": torch.tensor([a["category_id"] for a in annotations], dtype=torch.int64),
            "masks": torch.from_numpy(np.stack(masks)) if masks else torch.zeros((0, height, width), dtype=torch.uint8),
            "image_id": torch.tensor(info["id"]),
        }
        return pil_to_tensor(image).float() / 255.0, target


def collate(batch: List[Tuple[torch.Tensor, Target]]) -> Tuple[List[torch.Tensor], List[Target]]:
    """Keeps a batch as lists: the model takes images of different sizes."""
    images, targets = zip(*batch)
    return list(images), list(targets)


def batches(loader: DataLoader, sampler: DistributedSampler) -> Iterator[Tuple[List[torch.Tensor], List[Target]]]:
    """Yields batches without end, reshuffling the shards at each pass over the data."""
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        yield from loader
        epoch += 1


def default_threads() -> int:
    """The cores this process may use, shared among the ranks of its host."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // hvd.local_size())


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR",
                        help=f"the data set `dtrain data make-shapes` wrote (default: {DEFAULT_DATA})")
    parser.add_argument("--iterations", type=int, default=300, metavar="N",
                        help="optimizer steps (default: 300)")
    parser.add_argument("--batch-size", type=int, default=2, metavar="N",
                        help="images per rank per step (default: 2)")
    parser.add_argument("--lr", type=float, default=0.005, metavar="LR",
                        help="SGD learning rate for one rank; multiplied by the number of ranks (default: 0.005)")
    parser.add_argument("--warmup", type=int, default=100, metavar="N",
                        help="steps over which the learning rate rises linearly to its value (default: 100)")
    parser.add_argument("--min-size", type=int, default=128, metavar="PIXELS",
                        help="the model resizes each image so its shorter side is this long (default: 128)")
    parser.add_argument("--seed", type=int, default=1, metavar="N",
                        help="random seed shared by all ranks (default: 1)")
    parser.add_argument("--threads", type=int, default=0, metavar="N",
                        help="intra-op threads per rank (default: the cores divided among this host's ranks)")
    parser.add_argument("--log-interval", type=int, default=20, metavar="N",
                        help="print the losses every N steps (default: 20)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    hvd.init()

    if torch.cuda.is_available():
        # One GPU per process: the ranks of a host take its GPUs in order.
        torch.cuda.set_device(hvd.local_rank())
        device = torch.device("cuda", hvd.local_rank())
    else:
        device = torch.device("cpu")
    # Intra-op threads: ranks sharing a host would otherwise each start one per core.
    torch.set_num_threads(args.threads if args.threads > 0 else default_threads())

    try:
        dataset = ShapesDataset(args.data, "train")
    except DatasetError as error:
        sys.exit(f"maskrcnn_shapes.py: {error}")
    # Each rank reads a disjoint shard. drop_last keeps every batch full, so each rank's
    # gradients weigh the same in the average.
    sampler = DistributedSampler(dataset, num_replicas=hvd.size(), rank=hvd.rank(), shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True, collate_fn=collate)

    torch.manual_seed(args.seed)
    # Category ids are the model's class indices; 0 is the background.
    num_classes = 1 + max(dataset.categories)
    model = torchvision.models.detection.maskrcnn_resnet50_fpn(
        weights=None, weights_backbone=None, num_classes=num_classes,
        # The longer side is capped in the proportion of torchvision's defaults (800, 1333).
        min_size=args.min_size, max_size=args.min_size * 1333 // 800,
        # Fewer proposals and sampled regions than the COCO defaults: these images hold a
        # handful of objects, and a CPU step costs much less.
        rpn_pre_nms_top_n_train=1000, rpn_post_nms_top_n_train=500, box_batch_size_per_image=64,
    )
    # torchvision scales the mask logits' initial weights by their fan-out, the class count:
    # with 4 classes they start with a deviation of 0.7, the first mask logits near +-10 and
    # the first steps diverge. Start them near zero instead.
    mask_logits = model.roi_heads.mask_predictor.mask_fcn_logits
    torch.nn.init.normal_(mask_logits.weight, std=0.001)
    torch.nn.init.zeros_(mask_logits.bias)
    model.to(device)

    # Gradients are averaged over size() times as many images as one rank sees.
    lr = args.lr * hvd.size()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    # A randomly initialised network diverges if the full learning rate hits it at once.
    warmup = max(1, args.warmup)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))

    # Start all ranks from rank 0's weights (BatchNorm statistics included) and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    if hvd.rank() == 0:
        print(f"training Mask R-CNN on {hvd.size()} rank(s), {device.type}: {len(dataset)} images, "
              f"{args.batch_size} per rank per step, learning rate {lr:g}, {args.iterations} steps", flush=True)

    model.train()
    window_losses: Dict[str, float] = defaultdict(float)
    window_steps, window_start, started = 0, time.perf_counter(), time.perf_counter()
    data = batches(loader, sampler)
    for step in range(1, args.iterations + 1):
        images, targets = next(data)
        images = [image.to(device) for image in images]
        targets = [{key: value.to(device) for key, value in target.items()} for target in targets]

        loss_dict = model(images, targets)
        loss = sum(loss_dict.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()

        for name, value in loss_dict.items():
            window_losses[name] += value.item()
        window_steps += 1
        if step % args.log_interval == 0 or step == args.iterations:
            # One allreduce for all the losses; every rank must take part.
            names = sorted(window_losses)
            local = torch.tensor([window_losses[name] / window_steps for name in names])
            averaged = hvd.allreduce(local, name="train.losses").tolist()
            seconds = time.perf_counter() - window_start
            if hvd.rank() == 0:
                losses = "  ".join(f"{name}: {value:.4f}" for name, value in zip(names, averaged))
                images_per_second = window_steps * args.batch_size * hvd.size() / seconds
                print(f"step {step}/{args.iterations}  {losses}  total_loss: {sum(averaged):.4f}  "
                      f"lr: {scheduler.get_last_lr()[0]:.5f}  images/s: {images_per_second:.2f}", flush=True)
            window_losses.clear()
            window_steps, window_start = 0, time.perf_counter()

    if hvd.rank() == 0:
        seconds = time.perf_counter() - started
        print(f"done: {args.iterations} steps in {seconds:.1f} s, "
              f"{args.iterations * args.batch_size * hvd.size() / seconds:.2f} images/s", flush=True)


if __name__ == "__main__":
    main()
