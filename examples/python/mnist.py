#!/usr/bin/env python3
"""Data-parallel MNIST in PyTorch, written against Horovod's horovod.torch API.

The network, data files, batch size and optimizer of the C++ example dtrain-mnist; the
learning rate defaults to Adam's usual 0.001 per rank, which reaches about 99% test accuracy
in two epochs (dtrain-mnist's default, the seeds' 0.000125, needs many more). Start it under
dtrain's launcher, one process per rank:

    export PYTHONPATH=$PWD/build/python
    build/apps/dtrain run -np 2 -- python3 examples/python/mnist.py --epochs 2

Each rank trains on its own shard of the 60,000 training images; DistributedOptimizer
averages the gradients across ranks, so every rank applies the same update. Rank 0
prints the progress, the test accuracy and writes the checkpoint.
"""

import argparse
import os
import struct
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import dtrain.torch as hvd

# Where scripts/setup unpacks MNIST, found from this file so any working directory works; in a
# SageMaker-style job (dtrain job run) the training channel.
DEFAULT_DATA_DIR = Path(os.environ.get("SM_CHANNEL_TRAINING",
                                       Path(__file__).resolve().parents[2] / "data" / "mnist"))
# In such a job the model goes to the model directory, which becomes the job's artifact.
DEFAULT_CHECKPOINT = Path(os.environ["SM_MODEL_DIR"]) / "mnist.pt" if "SM_MODEL_DIR" in os.environ else None

# Mean and standard deviation of the training pixels (scaled to [0, 1]); the C++ example
# standardises with the same two numbers.
PIXEL_MEAN, PIXEL_STD = 0.1307, 0.3081

IMAGES_MAGIC, LABELS_MAGIC = 2051, 2049


class DatasetError(Exception):
    """An MNIST file is missing or malformed."""


def _read_idx(path: Path, magic: int, dims: int) -> Tuple[Tuple[int, ...], bytes]:
    """Returns the shape recorded in an idx file's header and the bytes after it."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(
            f"MNIST file {path} not found: run scripts/setup to fetch MNIST, "
            f"or pass --data-dir") from None
    header_size = 4 * (1 + dims)
    if len(data) < header_size:
        raise DatasetError(f"MNIST file {path} is too short for its header")
    found, *shape = struct.unpack(f">{1 + dims}I", data[:header_size])
    if found != magic:
        raise DatasetError(f"MNIST file {path} has magic {found}, expected {magic}")
    body = data[header_size:]
    if len(body) != int(np.prod(shape)):
        raise DatasetError(
            f"MNIST file {path} holds {len(body)} bytes after its header, "
            f"but its header promises {'x'.join(map(str, shape))}")
    return tuple(shape), body


def load_mnist(data_dir: Path, split: str) -> TensorDataset:
    """Reads one split ("train" or "t10k") of the idx files into standardised tensors.

    Images come back as float32 [N, 1, 28, 28], labels as int64 [N].
    """
    shape, pixels = _read_idx(data_dir / f"{split}-images-idx3-ubyte", IMAGES_MAGIC, 3)
    (count,), labels = _read_idx(data_dir / f"{split}-labels-idx1-ubyte", LABELS_MAGIC, 1)
    if count != shape[0]:
        raise DatasetError(
            f"MNIST {split} split in {data_dir}: {shape[0]} images but {count} labels")
    images = np.frombuffer(pixels, dtype=np.uint8).reshape(shape[0], 1, shape[1], shape[2])
    targets = np.frombuffer(labels, dtype=np.uint8)
    if targets.max(initial=0) > 9:
        raise DatasetError(f"MNIST {split} labels in {data_dir} go beyond 9")
    images = (torch.from_numpy(images.astype(np.float32)) / 255.0 - PIXEL_MEAN) / PIXEL_STD
    return TensorDataset(images, torch.from_numpy(targets.astype(np.int64)))


class Net(nn.Module):
    """The network of dtrain-mnist (src/mnist/mnist_net.cc): two 3x3 convolutions, max-pool,
    dropout, a 128-unit hidden layer, dropout, and log-probabilities of the 10 digits."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(64 * 12 * 12, 128)
        self.dropout2 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, 10)
        # Glorot-uniform weights and zero biases, as in the Keras model this network comes
        # from and in the C++ example; PyTorch's default would start fc1 smaller.
        for name, parameter in self.named_parameters():
            if name.endswith("weight"):
                nn.init.xavier_uniform_(parameter)
            else:
                nn.init.zeros_(parameter)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(self.dropout1(x), 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(self.dropout2(x))
        return F.log_softmax(x, dim=1)


def metric_average(value: float, name: str) -> float:
    """The mean of ``value`` over all ranks."""
    return hvd.allreduce(torch.tensor(value, dtype=torch.float64), name=name).item()


def train_epoch(model: nn.Module, loader: DataLoader, optimizer: torch.optim.Optimizer,
                epoch: int, device: torch.device, log_interval: int) -> float:
    """Trains one pass over this rank's shard; returns the loss averaged over batches and ranks."""
    model.train()
    total_loss = 0.0
    for batch, (images, labels) in enumerate(loader, start=1):
        images, labels = images.to(device), labels.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(images), labels)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
        if log_interval > 0 and batch % log_interval == 0:
            # Every rank takes part in the allreduce; only rank 0 prints.
            average = metric_average(loss.item(), "train.batch_loss")
            if hvd.rank() == 0:
                print(f"epoch {epoch} batch {batch}/{len(loader)}: loss {average:.4f}", flush=True)
    return metric_average(total_loss / len(loader), "train.epoch_loss")


@torch.no_grad()
def test_accuracy(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    """The fraction of this rank's test shard classified right, combined over all ranks."""
    model.eval()
    correct = 0
    for images, labels in loader:
        predicted = model(images.to(device)).argmax(dim=1)
        correct += (predicted == labels.to(device)).sum().item()
    # The shards may differ in size by one image, so the mean of the counts is combined,
    # not the mean of the per-rank accuracies.
    return (metric_average(float(correct), "test.correct")
            / metric_average(float(len(loader.dataset)), "test.count"))


def test_shard(dataset: TensorDataset, rank: int, size: int) -> Subset:
    """Rank ``rank``'s contiguous slice of the test set; together the slices cover it once."""
    n = len(dataset)
    return Subset(dataset, range(n * rank // size, n * (rank + 1) // size))


def default_threads(local_size: int) -> int:
    """The cores this process may use, shared among the ``local_size`` ranks of its host."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cores or 1) // local_size)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1, metavar="N",
                        help="passes over the training set (default: 1)")
    parser.add_argument("--batch-size", type=int, default=128, metavar="N",
                        help="images per rank per step (default: 128)")
    parser.add_argument("--lr", type=float, default=0.001, metavar="LR",
                        help="Adam learning rate for one rank; multiplied by the number of ranks (default: 0.001)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR",
                        help=f"directory with the MNIST idx files (default: {DEFAULT_DATA_DIR})")
    parser.add_argument("--seed", type=int, default=42, metavar="N",
                        help="random seed shared by all ranks (default: 42)")
    wire = parser.add_mutually_exclusive_group()
    wire.add_argument("--fp16-allreduce", action="store_true",
                      help="send gradients as float16 (half the bytes, slightly less precise)")
    wire.add_argument("--bf16-allreduce", action="store_true",
                      help="send gradients as bfloat16 (half the bytes, float32's range, less precise than float16)")
    parser.add_argument("--threads", type=int, default=0, metavar="N",
                        help="intra-op threads per rank (default: the cores divided among this host's ranks)")
    parser.add_argument("--log-interval", type=int, default=50, metavar="N",
                        help="print the loss every N batches; 0 turns it off (default: 50)")
    parser.add_argument("--checkpoint", type=Path, default=DEFAULT_CHECKPOINT, metavar="PATH",
                        help="where rank 0 saves the model and optimizer after each epoch")
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
    torch.set_num_threads(args.threads if args.threads > 0 else default_threads(hvd.local_size()))

    try:
        train_set = load_mnist(args.data_dir, "train")
        test_set = load_mnist(args.data_dir, "t10k")
    except DatasetError as error:
        sys.exit(f"mnist.py: {error}")

    # Every rank sees a different shard of the training set, reshuffled each epoch.
    train_sampler = DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank(),
                                       shuffle=True, seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=train_sampler)
    test_loader = DataLoader(test_shard(test_set, hvd.rank(), hvd.size()), batch_size=200)

    torch.manual_seed(args.seed)
    model = Net().to(device)
    # The gradients are averaged over size() times as many images as one rank sees, so
    # the step can be that much larger.
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr * hvd.size())

    compression = hvd.Compression.none
    if args.fp16_allreduce:
        compression = hvd.Compression.fp16
    elif args.bf16_allreduce:
        compression = hvd.Compression.bf16
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)

    # Start all ranks from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    # Dropout masks differ between ranks, as they would between the images of one big batch.
    torch.manual_seed(args.seed + hvd.rank())

    if hvd.rank() == 0:
        print(f"training on {hvd.size()} rank(s), {device.type}: batch {args.batch_size} per rank, "
              f"learning rate {args.lr * hvd.size():g}, {len(train_loader)} steps per epoch", flush=True)

    started = time.perf_counter()
    accuracy = 0.0
    for epoch in range(1, args.epochs + 1):
        train_sampler.set_epoch(epoch)
        epoch_start = time.perf_counter()
        loss = train_epoch(model, train_loader, optimizer, epoch, device, args.log_interval)
        seconds = time.perf_counter() - epoch_start
        accuracy = test_accuracy(model, test_loader, device)
        if hvd.rank() == 0:
            images_per_second = len(train_sampler) * hvd.size() / seconds
            print(f"epoch {epoch}: time {seconds:.1f} s, {images_per_second:.0f} images/s, "
                  f"average loss {loss:.4f}, test accuracy {accuracy:.4f}", flush=True)
            if args.checkpoint is not None:
                # One writer: the ranks hold the same weights.
                torch.save({"epoch": epoch, "model": model.state_dict(),
                            "optimizer": optimizer.state_dict()}, args.checkpoint)
    if hvd.rank() == 0:
        print(f"done: {args.epochs} epoch(s) in {time.perf_counter() - started:.1f} s, "
              f"test accuracy {accuracy:.4f}", flush=True)


if __name__ == "__main__":
    main()
