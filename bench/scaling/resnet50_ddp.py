"""The peer of dtrain-bench-resnet50: torchvision's resnet50 on random 224x224 images, batch
32 per rank, SGD, data-parallel through PyTorch's DistributedDataParallel over Gloo (the
backend PyTorch users pick on CPUs). Same LibTorch as dtrain (Debian's python3-torch).

    python3 resnet50_ddp.py --ranks 2 [--batch 32] [--warmup 2] [--steps 10] [--threads 1]

Starts the ranks itself (torch.multiprocessing); rank 0 prints the images/s of all ranks.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision

from ddp_timing import seconds_for_steps


def train(rank, args):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(42)
    model = torchvision.models.resnet50()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    sgd = torch.optim.SGD(ddp.parameters(), lr=0.01 * args.ranks, momentum=0.9)
    images = torch.randn(args.batch, 3, 224, 224)
    labels = torch.randint(0, 1000, (args.batch,))

    def step():
        sgd.zero_grad()
        torch.nn.functional.cross_entropy(ddp(images), labels).backward()
        sgd.step()

    seconds = seconds_for_steps(step, args.warmup, args.steps)
    if rank == 0:
        parameters = sum(p.numel() for p in model.parameters())
        print(f"resnet50 ddp ranks={args.ranks} batch={args.batch} threads={args.threads} "
              f"parameters={parameters} steps={args.steps}: "
              f"{args.batch * args.ranks * args.steps / seconds:.2f} images/s", flush=True)
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--port", type=int, default=29533)
    args = parser.parse_args()
    mp.spawn(train, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
