"""What dtrain's Python API adds to the C++ runtime, measured from Python: a blocking 4 KiB
allreduce (``hvd.allreduce_``), and ResNet-50's 161 gradient tensors submitted one by one with
``hvd.allreduce_async_`` (as DistributedOptimizer's hooks submit them) and waited for, which
the runtime fuses. ``bench/python/overhead`` runs it beside the same measurements of the C++
API (``dtrain-bench allreduce``) in one run.

    dtrain run -np 2 -- python3 bench/python/overhead.py [--seconds 1.0] [--json FILE]
"""
import argparse
import json
import time
from typing import Callable, List

import torch
import torchvision

import dtrain.torch as hvd


def time_per_op(op: Callable[[], None], budget_s: float, min_iterations: int = 3) -> float:
    """Seconds per call of ``op``, the slowest rank's view.

    Rank 0 picks an iteration count that fits the budget from a probe of doubling length, and
    every rank runs that many, so the timed loop holds no synchronisation of its own.
    """
    op()  # warm up: caches, connections, the response cache
    iterations = 1
    while True:  # every rank runs each probe; rank 0's clock decides when to stop
        start = time.perf_counter()
        for _ in range(iterations):
            op()
        elapsed = time.perf_counter() - start
        done = elapsed >= 0.05 * budget_s or iterations >= 100000
        if hvd.broadcast_object(done, 0, name="overhead.probe"):
            break
        iterations *= 2
    count = hvd.broadcast_object(max(min_iterations, int(budget_s / (elapsed / iterations))), 0,
                                 name="overhead.count")
    hvd.barrier()
    start = time.perf_counter()
    for _ in range(count):
        op()
    elapsed = torch.tensor([(time.perf_counter() - start) / count], dtype=torch.float64)
    return hvd.allreduce(elapsed, op=hvd.Max, name="overhead.elapsed").item()


def resnet50_gradients() -> List[torch.Tensor]:
    """Tensors shaped like ResNet-50's 161 parameters (torchvision's), in backward's order."""
    return [torch.rand_like(p) for p in reversed(list(torchvision.models.resnet50().parameters()))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time budget per measurement")
    parser.add_argument("--json", help="append the results as a JSON line to this file (rank 0)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    hvd.init()

    small = torch.rand(1024)  # 4 KiB of float32
    blocking = time_per_op(lambda: hvd.allreduce_(small, name="overhead.4k"), args.seconds)

    gradients = resnet50_gradients()
    names = [f"overhead.grad.{i}" for i in range(len(gradients))]

    def fused() -> None:
        handles = [hvd.allreduce_async_(g, name=n) for g, n in zip(gradients, names)]
        for handle in handles:
            hvd.synchronize(handle)

    fused_s = time_per_op(fused, args.seconds)
    if hvd.rank() == 0:
        megabytes = sum(g.numel() * g.element_size() for g in gradients) / 2**20
        print(f"python: blocking 4 KiB allreduce {blocking * 1e6:.1f} us; ResNet-50 gradients "
              f"({len(gradients)} tensors, {megabytes:.1f} MiB) from Python {fused_s * 1e3:.2f} ms")
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"bench": "python_overhead", "ranks": hvd.size(), "allreduce_4k_s": blocking,
                                    "resnet50_gradients_s": fused_s, "tensors": len(gradients)}) + "\n")
    hvd.shutdown()


if __name__ == "__main__":
    main()
