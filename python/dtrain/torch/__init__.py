"""Horovod's ``horovod.torch`` API over dtrain's C++ runtime.

A script written for Horovod runs by changing its import::

    import dtrain.torch as hvd

    hvd.init()
    torch.cuda.set_device(hvd.local_rank())          # on GPUs
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

and is started by ``dtrain run -np 4 python3 train.py`` (or ``dtrain run --slurm``, a bare
``srun``, ``mpirun``, ``dtrain job run``). What of Horovod's API is not supported raises an
error that says so: docs/python.md lists it.
"""
from dtrain._version_check import check_torch

check_torch()  # before the extension loads: another torch is one clear line, not an undefined symbol

from dtrain.common.exceptions import DtrainError, HorovodInternalError, HostsUpdatedInterrupt, WorkersLostError
from dtrain.torch import distributed, elastic
from dtrain.torch.collectives import (Adasum, Average, add_process_set, remove_process_set, Max, Min, Product, ProcessSet, Sum, allgather,
                                      allgather_async, allgather_object, allreduce, allreduce_, allreduce_async,
                                      allreduce_async_, alltoall, alltoall_async, barrier, broadcast, broadcast_,
                                      broadcast_async, broadcast_async_, broadcast_object, ccl_built, cross_rank,
                                      cross_size, cuda_built, ddl_built, gloo_built, gloo_enabled, global_process_set,
                                      grouped_allgather, grouped_allgather_async, grouped_allreduce,
                                      grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
                                      grouped_reducescatter, grouped_reducescatter_async, init, is_homogeneous,
                                      is_initialized, join, local_rank, local_size, mpi_built, mpi_enabled,
                                      mpi_threads_supported, nccl_built, poll, rank, reducescatter,
                                      reducescatter_async, rocm_built, shutdown, size, start_timeline, stop_timeline,
                                      synchronize)
from dtrain.torch.compression import Compression
from dtrain.torch.functions import broadcast_optimizer_state, broadcast_parameters
from dtrain.torch.optimizer import DistributedOptimizer
from dtrain.torch.sync_batch_norm import SyncBatchNorm
