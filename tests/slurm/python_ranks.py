"""A Python rank for the Slurm tests: where dtrain.torch says it is, and an allreduce checked.

Prints ``python rank R of S on host H (local rank L of LS, cross rank C of CS): allreduce correct``.
"""
import socket

import torch

import dtrain.torch as hvd

hvd.init()
summed = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, name="slurm.python")
expected = hvd.size() * (hvd.size() - 1) / 2
verdict = "allreduce correct" if summed.item() == expected else f"allreduce gave {summed.item()}, not {expected}"
print(f"python rank {hvd.rank()} of {hvd.size()} on host {socket.gethostname()} (local rank {hvd.local_rank()} "
      f"of {hvd.local_size()}, cross rank {hvd.cross_rank()} of {hvd.cross_size()}): {verdict}", flush=True)
hvd.shutdown()
