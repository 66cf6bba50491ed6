"""torchvision's Mask R-CNN trained data-parallel from Python through dtrain.torch: the model,
weights and images of bench/scaling/maskrcnn_ddp.py (the shapes config's layout, 2 synthetic
images per rank), Horovod's recipe (DistributedOptimizer, broadcast from rank 0).

    dtrain run -np 2 -- python3 maskrcnn_hvd.py WORKDIR [--warmup 3] [--steps 20] [--threads 1]
    python3 maskrcnn_hvd.py WORKDIR --images-of-rank R ...   # one process alone, on rank R's images

Rank 0 prints the images/s of all ranks (``... : N images/s``).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scaling"))
from maskrcnn_ddp import IMAGES_PER_RANK, build_model  # noqa: E402

import dtrain.torch as hvd  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--images-of-rank", type=int, default=None,
                        help="train alone (no other rank) on the images this rank has in the 2-rank run")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    hvd.init()
    shard = hvd.rank() if args.images_of_rank is None else args.images_of_rank
    model = build_model()
    model.load_state_dict(torch.load(f"{args.workdir}/weights.pth"))
    inputs = torch.load(f"{args.workdir}/inputs.pth")
    mine = range(shard * IMAGES_PER_RANK, (shard + 1) * IMAGES_PER_RANK)
    images = [inputs[f"image{i}"] for i in mine]
    targets = [{key: inputs[f"target{i}_{key}"] for key in ("boxes", "labels", "masks")} for i in mine]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    model.train()

    def step() -> None:
        optimizer.zero_grad()
        sum(model(images, targets).values()).backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    hvd.barrier()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    hvd.barrier()
    seconds = time.perf_counter() - start
    if hvd.rank() == 0:
        print(f"maskrcnn-shapes dtrain.torch ranks={hvd.size()} steps={args.steps}: "
              f"{IMAGES_PER_RANK * hvd.size() * args.steps / seconds:.2f} images/s", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
