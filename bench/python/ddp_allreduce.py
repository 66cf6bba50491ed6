"""Allreduce latency and bandwidth through torch.distributed (``dist.all_reduce``) for one or more
backends in one job, e.g. dtrain's torch.distributed backend against Gloo: float32 tensors from
4 KiB to 64 MiB, each size timed per backend in several rounds whose backend order turns each
round. Ranks are started as torchrun starts them (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE):

    PYTHONPATH=build/python dtrain run -np 2 -- python3 bench/python/ddp_allreduce.py \\
        --backends dtrain,gloo [--rounds 5] [--seconds 0.25] [--json FILE]

A process has one default process group: the first backend's. Each further backend gets a group
of all ranks from ``dist.new_group(backend=...)`` (a backend may be named twice, e.g. gloo,gloo,
to see two groups of one backend), and every ``all_reduce`` names its group. The bench's own
coordination (barriers, iteration counts, the slowest rank's time) goes through a separate Gloo
group, so the measured groups carry nothing but the timed allreduces and a check of their sums.

Rank 0 prints, per size and backend, the median [min, max] over the rounds of microseconds per
allreduce, the algorithm bandwidth (bytes / time) and the time relative to the first backend's
in the same round; ``--json`` appends one JSON line per size and backend.
"""
import argparse
import json
import os
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional

import torch
import torch.distributed as dist

import dtrain.torch  # noqa: F401  registers the "dtrain" backend

KIB, MIB = 1024, 1024 * 1024
DEFAULT_SIZES = [4 * KIB * 4**k for k in range(8)]  # 4 KiB, 16 KiB, ..., 64 MiB
FLOAT32_BYTES = 4


def human_bytes(count: int) -> str:
    """``count`` bytes as 4 KiB, 16 MiB, ..."""
    for unit, scale in (("GiB", 1024**3), ("MiB", MIB), ("KiB", KIB)):
        if count >= scale and count % scale == 0:
            return f"{count // scale} {unit}"
    return f"{count} B"


def parse_size(text: str) -> int:
    """A byte count written as 4096, 4k, 4KiB, 64M or 64MiB."""
    value = text.strip().lower().replace("ib", "").replace("b", "")
    for suffix, scale in (("k", KIB), ("m", MIB), ("g", 1024**3)):
        if value.endswith(suffix):
            return int(float(value[:-1]) * scale)
    return int(value)


class Bench:
    """The measured groups, one per backend named, and the Gloo group that coordinates them."""

    def __init__(self, backends: List[str], device: torch.device) -> None:
        self.device = device
        self.labels = unique_labels(backends)
        # Every rank creates the groups in the same order, as new_group requires.
        self.groups: Dict[str, Optional[dist.ProcessGroup]] = {self.labels[0]: None}  # None: the default group
        for label, backend in zip(self.labels[1:], backends[1:]):
            self.groups[label] = dist.new_group(backend=backend)
        self.control = dist.new_group(backend="gloo")

    def agree(self, value: float) -> float:
        """Rank 0's ``value``, on every rank."""
        tensor = torch.tensor([value], dtype=torch.float64)
        dist.broadcast(tensor, src=0, group=self.control)
        return tensor.item()

    def slowest(self, value: float) -> float:
        """The largest ``value`` over the ranks."""
        tensor = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=self.control)
        return tensor.item()

    def synchronize(self) -> None:
        """Waits for the device's queued work (a no-op on the CPU)."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def check_sum(self, label: str, tensor: torch.Tensor) -> None:
        """Exits (on every rank) unless the backend's allreduce sums rank+1 over the ranks."""
        size = dist.get_world_size()
        tensor.fill_(dist.get_rank() + 1)
        dist.all_reduce(tensor, group=self.groups[label])
        self.synchronize()
        wrong = float(not bool(torch.all(tensor == size * (size + 1) / 2)))
        if self.slowest(wrong):
            sys.exit(f"ddp_allreduce.py: {label}'s allreduce of {human_bytes(tensor.numel() * FLOAT32_BYTES)} "
                     f"returned a wrong sum on at least one rank")
        tensor.zero_()  # zeros from here on: repeated sums neither grow nor turn denormal

    def seconds_per_op(self, op: Callable[[], None], count: int) -> float:
        """Seconds per call of ``op`` over ``count`` calls started together, the slowest rank's view."""
        op()  # warm: this group's buffers and connections after the other backend's turn
        self.synchronize()
        dist.barrier(group=self.control)
        start = time.perf_counter()
        for _ in range(count):
            op()
        self.synchronize()
        return self.slowest((time.perf_counter() - start) / count)

    def probe(self, op: Callable[[], None], budget_s: float) -> float:
        """A rough seconds per call, from calls doubling in number until they fill a tenth of the budget.

        Every rank runs each probe; rank 0's clock decides when to stop.
        """
        op()
        iterations = 1
        while True:
            self.synchronize()
            start = time.perf_counter()
            for _ in range(iterations):
                op()
            self.synchronize()
            elapsed = time.perf_counter() - start
            if self.agree(float(elapsed >= 0.1 * budget_s or iterations >= 65536)):
                return self.slowest(elapsed / iterations)
            iterations *= 2


def unique_labels(backends: List[str]) -> List[str]:
    """The backends' names, a repeated one numbered from its second use on (gloo, gloo#2)."""
    labels, seen = [], {}
    for backend in backends:
        seen[backend] = seen.get(backend, 0) + 1
        labels.append(backend if seen[backend] == 1 else f"{backend}#{seen[backend]}")
    return labels


def spread(values: List[float], digits: int = 2) -> str:
    """``[min, max]`` of ``values``, with ``digits`` decimals."""
    return f"[{min(values):.{digits}f}, {max(values):.{digits}f}]"


def parse_args() -> argparse.Namespace:
    """The command line's options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="dtrain,gloo",
                        help="comma-separated torch.distributed backends; the first is the default group's "
                             "and the one the others are compared with (default: dtrain,gloo)")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated tensor sizes in bytes, e.g. 4k,64k,1m (default: 4 KiB to 64 MiB "
                             "by factors of 4)")
    parser.add_argument("--min-bytes", type=parse_size, default=None, help="leave out the sizes below this")
    parser.add_argument("--max-bytes", type=parse_size, default=None, help="leave out the sizes above this")
    parser.add_argument("--rounds", type=int, default=5, help="measurements per size and backend (default: 5)")
    parser.add_argument("--seconds", type=float, default=0.25,
                        help="time budget of one measurement, for the slowest backend (default: 0.25)")
    parser.add_argument("--min-iterations", type=int, default=3,
                        help="allreduces per measurement at least (default: 3)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where the tensors live; cuda takes the GPU of LOCAL_RANK (default: cpu)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per rank (default: 1)")
    parser.add_argument("--json", help="append the results as JSON lines to this file (rank 0)")
    return parser.parse_args()


def main() -> None:
    """Measures every size for every backend, in rounds, and prints the table on rank 0."""
    args = parse_args()
    torch.set_num_threads(args.threads)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not backends:
        sys.exit("ddp_allreduce.py: --backends names no backend")
    sizes = [parse_size(s) for s in args.sizes.split(",")] if args.sizes else DEFAULT_SIZES
    sizes = [s for s in sizes if (args.min_bytes is None or s >= args.min_bytes)
             and (args.max_bytes is None or s <= args.max_bytes)]
    if not sizes or any(s < FLOAT32_BYTES or s % FLOAT32_BYTES for s in sizes):
        sys.exit("ddp_allreduce.py: the sizes must be whole float32 tensors (multiples of 4 bytes), at least one")

    # init_method env://: MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE come from the launcher.
    dist.init_process_group(backend=backends[0])
    rank, ranks = dist.get_rank(), dist.get_world_size()
    if args.device == "cuda":
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    bench = Bench(backends, device)
    labels = bench.labels

    # One tensor per backend, so no backend finds another's data in its caches.
    tensors = {label: torch.zeros(max(sizes) // FLOAT32_BYTES, dtype=torch.float32, device=device)
               for label in labels}

    def allreduce(label: str, count: int) -> Callable[[], None]:
        """One blocking allreduce of ``count`` floats through ``label``'s group."""
        tensor, group = tensors[label][:count], bench.groups[label]
        return lambda: dist.all_reduce(tensor, group=group)

    # Each size's iteration count, the same for every backend and round: the budget over the
    # slowest backend's probe.
    iterations: Dict[int, int] = {}
    for size in sizes:
        count = size // FLOAT32_BYTES
        for label in labels:
            bench.check_sum(label, tensors[label][:count])
        slowest = max(bench.probe(allreduce(label, count), args.seconds) for label in labels)
        iterations[size] = int(bench.agree(max(args.min_iterations, min(100000, int(args.seconds / slowest)))))

    seconds: Dict[int, Dict[str, List[float]]] = {size: {label: [] for label in labels} for size in sizes}
    for round_index in range(args.rounds):
        order = labels[round_index % len(labels):] + labels[:round_index % len(labels)]
        for size in sizes:
            for label in order:
                op = allreduce(label, size // FLOAT32_BYTES)
                seconds[size][label].append(bench.seconds_per_op(op, iterations[size]))

    if rank == 0:
        first = labels[0]
        print(f"dist.all_reduce of float32, {ranks} ranks, {args.device}, {args.rounds} rounds turning the "
              f"backends' order: median [min, max] over the rounds", flush=True)
        print(f"  {'size':>7}  {'backend':10} {'us/op':>10} {'[min, max]':<19} {'GB/s':>8}  time / {first}'s")
        for size in sizes:
            for label in labels:
                values = seconds[size][label]
                median = statistics.median(values)
                micro = [v * 1e6 for v in values]
                ratios = [v / f for v, f in zip(values, seconds[size][first])]
                ratio = "" if label == first else f"{statistics.median(ratios):.2f}x {spread(ratios)}"
                print(f"  {human_bytes(size):>7}  {label:10} {median * 1e6:10.1f} {spread(micro, 1):<19} "
                      f"{size / median / 1e9:8.3f}  {ratio}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                for size in sizes:
                    for label, backend in zip(labels, backends):
                        values = seconds[size][label]
                        f.write(json.dumps({
                            "bench": "ddp_allreduce", "ranks": ranks, "device": args.device, "backend": backend,
                            "label": label, "bytes": size, "iterations": iterations[size],
                            "seconds_per_allreduce": values, "median_s": statistics.median(values),
                            "algbw_gbps": size / statistics.median(values) / 1e9,
                            "ratio_to_first": [v / f for v, f in zip(values, seconds[size][labels[0]])],
                        }) + "\n")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
