"""A Python rank for the Slurm tests: where dtrain.torch says it is, and an allreduce checked,
through Horovod's API and through torch.distributed's backend "dtrain" (init_method env://,
whose variables Slurm's world gives).

Prints ``python rank R of S on host H (local rank L of LS, cross rank C of CS): allreduce correct``
and ``torch.distributed rank R of S: all_reduce correct``.
"""
import socket

import torch
import torch.distributed as dist

import dtrain.torch as hvd

hvd.init()
summed = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, name="slurm.python")
expected = hvd.size() * (hvd.size() - 1) / 2
verdict = "allreduce correct" if summed.item() == expected else f"allreduce gave {summed.item()}, not {expected}"
print(f"python rank {hvd.rank()} of {hvd.size()} on host {socket.gethostname()} (local rank {hvd.local_rank()} "
      f"of {hvd.local_size()}, cross rank {hvd.cross_rank()} of {hvd.cross_size()}): {verdict}", flush=True)

dist.init_process_group(backend="dtrain")
summed = torch.tensor([float(dist.get_rank())])
dist.all_reduce(summed)
verdict = "all_reduce correct" if summed.item() == expected else f"all_reduce gave {summed.item()}, not {expected}"
print(f"torch.distributed rank {dist.get_rank()} of {dist.get_world_size()}: {verdict}", flush=True)
dist.destroy_process_group()
hvd.shutdown()
