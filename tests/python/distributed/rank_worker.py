"""One rank of a torch.distributed job over "dtrain", started the way the test says.

``--init env`` reads torchrun's variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE),
``--init tcp`` passes ``tcp://MASTER_ADDR:MASTER_PORT`` with rank and world size, ``--init
file`` gives a FileStore as ``store=``; ``--backend`` names the backend (``dtrain``, or a
device mapping such as ``cpu:dtrain,cuda:gloo``). ``--then`` says what follows a first allreduce:
``train`` (a few DDP steps), ``die`` (rank 1 exits at once), ``stall`` (rank 1 stays alive
and never calls the next collective).
"""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
from torch import nn

import dtrain.torch  # noqa: F401  (registers the "dtrain" backend)


def init(how: str, backend: str, timeout: datetime.timedelta, store_path: str) -> None:
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if how == "env":
        dist.init_process_group(backend=backend, timeout=timeout)
    elif how == "tcp":
        url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        dist.init_process_group(backend=backend, init_method=url, rank=rank, world_size=size, timeout=timeout)
    else:
        store = dist.FileStore(store_path, size)
        dist.init_process_group(backend=backend, store=store, rank=rank, world_size=size, timeout=timeout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--init", choices=["env", "tcp", "file"], default="env")
    parser.add_argument("--then", choices=["train", "die", "stall"], default="train")
    parser.add_argument("--timeout-s", type=float, default=60)
    parser.add_argument("--store", default="")
    parser.add_argument("--backend", default="dtrain")
    args = parser.parse_args()
    init(args.init, args.backend, datetime.timedelta(seconds=args.timeout_s), args.store)
    rank, size = dist.get_rank(), dist.get_world_size()
    cpu_backend = dist.group.WORLD._get_backend(torch.device("cpu")).name()
    print(f"rank {rank}: CPU tensors go to backend {cpu_backend}", flush=True)
    t = torch.full((4,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((4,), size * (size + 1) / 2)), t
    print(f"rank {rank}: first allreduce ok", flush=True)

    if args.then == "train":
        torch.manual_seed(0)
        model = nn.parallel.DistributedDataParallel(nn.Linear(5, 1).double())
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(5):
            g = torch.Generator().manual_seed(10 * step + rank)
            x = torch.randn(8, 5, generator=g, dtype=torch.float64)
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        weights = [torch.empty(5, dtype=torch.float64) for _ in range(size)]
        dist.all_gather(weights, model.module.weight.detach().reshape(-1))
        assert all(torch.equal(w, weights[0]) for w in weights), "replicas differ"
        print(f"rank {rank}: trained", flush=True)
        dist.destroy_process_group()
        return

    if rank == 1:
        if args.then == "die":
            os._exit(3)
        time.sleep(args.timeout_s * 4)  # stall: alive, but never at the collective
        os._exit(0)
    try:
        dist.all_reduce(torch.ones(3))
    except RuntimeError as e:
        print(f"rank {rank}: raised RuntimeError: {e}", flush=True)
        os._exit(0)
    print(f"rank {rank}: the collective returned", flush=True)
    os._exit(1)


if __name__ == "__main__":
    main()
