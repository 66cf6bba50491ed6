#!/usr/bin/env python3
"""Data-parallel MNIST in plain PyTorch: DistributedDataParallel over a torch.distributed backend.

The network, data files, batch size, optimizer and learning rate of examples/python/mnist.py
(whose Net and idx reader it imports), written as a PyTorch user writes DDP: the launcher sets
MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK (as torchrun does), and
``init_process_group`` reads them. ``import dtrain.torch`` registers dtrain's backend, "dtrain",
beside PyTorch's "gloo" and "nccl":

    export PYTHONPATH=$PWD/build/python
    build/apps/dtrain run -np 2 -- python3 examples/python/mnist_ddp.py --epochs 2
    torchrun --nproc_per_node 2 examples/python/mnist_ddp.py --epochs 2 --backend gloo

Each rank trains on its own shard of the 60,000 training images (DistributedSampler); DDP
averages the gradients across ranks during backward, so every rank applies the same update.
Rank 0 prints the progress and the test accuracy, last as mnist.py does
(``done: ... test accuracy 0.9xxx``); with ``--min-accuracy`` every rank exits with status 1
when the final accuracy falls short.
"""

import argparse
import os
import sys
import time
from pathlib import Path
from typing import List, Optional

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

import dtrain.torch  # noqa: F401  registers the "dtrain" backend

# The Horovod-API example beside this file: the same network and data, so the two compare.
from mnist import DEFAULT_CHECKPOINT, DEFAULT_DATA_DIR, DatasetError, Net, default_threads, load_mnist, test_shard


def all_ranks_sum(value: float, device: torch.device) -> float:
    """The sum of ``value`` over all ranks (every rank must call it)."""
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor)  # SUM; Gloo has no AVG
    return tensor.item()


def train_epoch(model: nn.Module, loader: DataLoader, optimizer: torch.optim.Optimizer,
                epoch: int, device: torch.device, log_interval: int) -> float:
    """Trains one pass over this rank's shard; returns the loss averaged over batches and ranks."""
    model.train()
    total_loss = 0.0
    for batch, (images, labels) in enumerate(loader, start=1):
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(images), labels)
        loss.backward()  # DDP's hooks allreduce the gradients here
        optimizer.step()
        total_loss += loss.item()
        if log_interval > 0 and batch % log_interval == 0:
            # Every rank takes part in the allreduce; only rank 0 prints.
            average = all_ranks_sum(loss.item(), device) / dist.get_world_size()
            if dist.get_rank() == 0:
                print(f"epoch {epoch} batch {batch}/{len(loader)}: loss {average:.4f}", flush=True)
    return all_ranks_sum(total_loss / len(loader), device) / dist.get_world_size()


@torch.no_grad()
def test_accuracy(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    """The fraction of the test set classified right, each rank scoring its own slice."""
    model.eval()
    correct = 0
    for images, labels in loader:
        predicted = model(images.to(device)).argmax(dim=1)
        correct += (predicted == labels.to(device)).sum().item()
    # The slices may differ in size by one image: the counts are summed, not the accuracies averaged.
    return all_ranks_sum(float(correct), device) / all_ranks_sum(float(len(loader.dataset)), device)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="dtrain", metavar="NAME",
                        help='torch.distributed backend: "dtrain", "gloo", "nccl" (default: dtrain)')
    parser.add_argument("--epochs", type=int, default=1, metavar="N",
                        help="passes over the training set (default: 1)")
    parser.add_argument("--batch-size", type=int, default=128, metavar="N",
                        help="images per rank per step (default: 128)")
    parser.add_argument("--lr", type=float, default=0.001, metavar="LR",
                        help="Adam learning rate for one rank; multiplied by the number of ranks (default: 0.001)")
    parser.add_argument("--data-dir", "--data", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR",
                        help=f"directory with the MNIST idx files (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--seed", type=int, default=42, metavar="N",
                        help="random seed shared by all ranks (default: 42)")
    parser.add_argument("--threads", type=int, default=0, metavar="N",
                        help="intra-op threads per rank (default: the cores divided among this host's ranks)")
    parser.add_argument("--log-interval", type=int, default=50, metavar="N",
                        help="print the loss every N batches; 0 turns it off (default: 50)")
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_CHECKPOINT, metavar="PATH",
                        help="rank 0 saves the model's weights here after training "
                             "(default: $SM_MODEL_DIR/mnist.pt in a job, else none)")
    parser.add_argument("--min-accuracy", type=float, default=None, metavar="A",
                        help="exit with status 1 if the final test accuracy is below A (e.g. 0.985)")
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> None:
    """Trains and tests on this rank; every rank of the job runs it."""
    args = parse_args(argv)
    # init_method env://: MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE come from the launcher.
    dist.init_process_group(backend=args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    # torchrun sets LOCAL_WORLD_SIZE; a launcher that does not is taken to put all ranks on one host.
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", size))

    if torch.cuda.is_available():
        # One GPU per process: the ranks of a host take its GPUs in order.
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    # Intra-op threads: ranks sharing a host would otherwise each start one per core.
    torch.set_num_threads(args.threads if args.threads > 0 else default_threads(local_world_size))

    try:
        train_set = load_mnist(args.data_dir, "train")
        test_set = load_mnist(args.data_dir, "t10k")
    except DatasetError as error:
        sys.exit(f"mnist_ddp.py: {error}")

    # Every rank sees a different shard of the training set, reshuffled each epoch.
    train_sampler = DistributedSampler(train_set, num_replicas=size, rank=rank, shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    test_loader = DataLoader(test_shard(test_set, rank, size), batch_size=200)

    torch.manual_seed(args.seed)
    net = Net().to(device)
    # DDP starts every rank from rank 0's weights and averages the gradients in backward.
    model = DistributedDataParallel(net, device_ids=[local_rank] if device.type == "cuda" else None)
    # The gradients are averaged over size times as many images as one rank sees, so the
    # step can be that much larger.
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr * size)

    # Dropout masks differ between ranks, as they would between the images of one big batch.
    torch.manual_seed(args.seed + rank)

    if rank == 0:
        print(f"training on {size} rank(s), backend {dist.get_backend()}, {device.type}: "
              f"batch {args.batch_size} per rank, learning rate {args.lr * size:g}, "
              f"{len(train_loader)} steps per epoch", flush=True)

    started = time.perf_counter()
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        train_sampler.set_epoch(epoch)
        epoch_start = time.perf_counter()
        loss = train_epoch(model, train_loader, optimizer, epoch, device, args.log_interval)
        seconds = time.perf_counter() - epoch_start
        # The wrapped module: scoring needs no gradients, so no collectives of DDP's.
        accuracy = test_accuracy(net, test_loader, device)
        if rank == 0:
            images_per_second = len(train_sampler) * size / seconds
            print(f"epoch {epoch}: time {seconds:.1f} s, {images_per_second:.0f} images/s, "
                  f"average loss {loss:.4f}, test accuracy {accuracy:.4f}", flush=True)
    if rank == 0:
        print(f"done: {args.epochs} epoch(s) in {time.perf_counter() - started:.1f} s, "
              f"test accuracy {accuracy:.4f}", flush=True)
        if args.checkpoint is not None:
            args.checkpoint.parent.mkdir(parents=True, exist_ok=True)
            torch.save(net.state_dict(), args.checkpoint)
    dist.destroy_process_group()
    # The accuracy is the same on every rank (summed over all), so all exit alike.
    if args.min_accuracy is not None and accuracy < args.min_accuracy:
        if rank == 0:
            print(f"mnist_ddp.py: test accuracy {accuracy:.4f} is below --min-accuracy {args.min_accuracy:g}",
                  file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
