"""The clock of the DDP peers, as timed_steps.h is dtrain's: `warmup` untimed steps, then
`steps` timed ones between two barriers, so the time is the job's."""
import time

import torch.distributed as dist


def seconds_for_steps(step, warmup, steps):
    for _ in range(warmup):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    return time.perf_counter() - start
