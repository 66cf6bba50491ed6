"""Horovod's ``horovod.torch`` collectives and process queries over dtrain's runtime.

Every function here takes and returns ``torch.Tensor`` objects and has Horovod's name,
arguments and defaults. The runtime (``dtrain.torch._core``) negotiates, fuses and moves the
bytes; this module names operations, checks arguments, applies compression and makes the
blocking forms differentiable as Horovod does.
"""
import collections
import itertools
import os
import pickle
import threading
import warnings
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import torch

from dtrain.torch import _core, wire
from dtrain.torch.compression import Compression, Compressor

# Reduction ops, as the runtime numbers them (dtrain::ReduceOp). Adasum is Horovod's
# adaptive summation, which dtrain does not implement.
Sum = 0
Average = 1
Min = 2
Max = 3
Product = 4
Adasum = 5
_OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product", Adasum: "Adasum"}


class ProcessSet:
    """Horovod's process set: some of the job's ranks, whose collectives run among themselves.

    Made from a list of ranks, it is registered on every rank by ``init(process_sets=[...])`` or
    ``add_process_set()``, which give it its ``process_set_id``; then any collective takes it as
    ``process_set=``. Each set negotiates, fuses and caches on its own, so operations on
    different sets run at the same time. ``global_process_set``, every rank, is the default.
    Roots (``root_rank``) are ranks of the job; ``rank()`` is this process's place in the set,
    the order of allgather's rows.
    """

    def __init__(self, ranks: Sequence[int]) -> None:
        self.ranks: List[int] = sorted(int(r) for r in ranks)  # in any order, as Horovod
        self.process_set_id: Optional[int] = None
        self._runtime_set = None  # the runtime's set once added

    def size(self) -> Optional[int]:
        """The number of ranks in the set; None until it is added."""
        if self.process_set_id is None:
            return None
        return self._runtime().size()

    def rank(self) -> Optional[int]:
        """This process's rank in the set (-1 if not a member); None until it is added."""
        if self.process_set_id is None:
            return None
        return self._runtime().rank()

    def included(self) -> Optional[bool]:
        """Whether this process is one of the set's ranks."""
        if self.process_set_id is None:
            return None
        return self._runtime().included()

    def _runtime(self):
        if self.process_set_id == 0:
            return _GLOBAL_SET
        if self._runtime_set is None:
            raise ValueError(f"dtrain: {self} has not been added: pass it to init(process_sets=...) or "
                             f"add_process_set() on every rank")
        return self._runtime_set

    def __repr__(self) -> str:
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks})"


_GLOBAL_SET = _core.ProcessSet()  # the runtime's global set: every rank
global_process_set = ProcessSet([])
global_process_set.process_set_id = 0
_added_sets: List[ProcessSet] = []  # since init(), in the order added


def add_process_set(process_set: Union[ProcessSet, Sequence[int]]) -> ProcessSet:
    """Registers a process set and returns it; every rank calls it, in the same order, with the
    same ranks (only the members connect).

    Ranks that differ between ranks, are out of range or repeated, or those of a set added
    already, raise ``HorovodInternalError`` on every rank.
    """
    _require_init()
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError(f"dtrain: {process_set} has been added already")
    runtime_set = _core.add_process_set(process_set.ranks)
    process_set._runtime_set = runtime_set
    process_set.process_set_id = int(runtime_set.name())
    _added_sets.append(process_set)
    return process_set


def remove_process_set(process_set: ProcessSet) -> bool:
    """Removes a set added before, on every rank (an operation a member still has in flight on
    it fails); returns False for the global set or one that is not added."""
    if process_set.process_set_id in (None, 0) or process_set not in _added_sets:
        return False
    _added_sets.remove(process_set)
    runtime_set, process_set._runtime_set, process_set.process_set_id = process_set._runtime_set, None, None
    _core.remove_process_set(runtime_set)
    return True


# ---- lifecycle and placement ----

_state = threading.local()
_names_lock = threading.Lock()
_name_counters: Dict[Tuple[str, Optional[int]], int] = collections.defaultdict(int)
_homogeneous: Optional[bool] = None


def _runtime_set(process_set: ProcessSet):
    """The runtime's set behind ``process_set``; raises ValueError if it has not been added or
    this rank is not one of its members."""
    if process_set is global_process_set:  # every operation's default: nothing to look up
        return _GLOBAL_SET
    if not isinstance(process_set, ProcessSet):
        raise TypeError(f"dtrain: process_set must be a ProcessSet, got {type(process_set).__name__}")
    runtime_set = process_set._runtime()
    if not runtime_set.included():
        raise ValueError(f"dtrain: rank {_core.rank()} is not in {process_set}")
    return runtime_set


def _check_process_set(process_set: ProcessSet) -> None:
    _runtime_set(process_set)


def _reset_names() -> None:
    """Unnamed operations are numbered per kind and set from 0 again: ranks of a new world agree."""
    with _names_lock:
        _name_counters.clear()


def init(comm=None, process_sets=None) -> None:
    """Starts dtrain's runtime in this process: rank and size come from the launcher.

    ``dtrain run``, ``dtrain run --slurm``, a bare ``srun``, ``mpirun`` and ``dtrain job run``
    all describe the world through the environment; under ``torchrun`` the ranks meet through
    torchrun's store (its ``env://`` variables). Calling it again after ``shutdown()``
    starts a new runtime. ``process_sets``: ProcessSet objects to add, in order (sets may also be
    added later; "dynamic" is accepted and changes nothing).
    """
    global _homogeneous
    if comm is not None:
        raise NotImplementedError("dtrain: init(comm=...): MPI communicators are not supported; "
                                  "start the ranks with dtrain run (or mpirun) and call init()")
    from dtrain.torch import distributed  # imports this module
    if not distributed.start_runtime_for_torchrun():
        _core.init()
    _reset_names()
    global_process_set.ranks = list(range(_core.size()))
    local_sizes = allgather_object(_core.local_size(), name="dtrain.init.local_sizes")
    _homogeneous = len(set(local_sizes)) == 1
    if process_sets is not None and process_sets != "dynamic":  # dtrain's sets are always dynamic
        for process_set in process_sets:
            add_process_set(process_set)


def shutdown() -> None:
    """Stops the runtime (after every operation in flight finished) and ends the process sets.
    ``init()`` may follow."""
    _core.shutdown()
    _forget_process_sets()


def _forget_process_sets() -> None:
    """The runtime ended every set (shutdown, or an elastic world re-formed): they are not added
    any more, and may be added again."""
    for process_set in _added_sets:
        process_set._runtime_set, process_set.process_set_id = None, None
    _added_sets.clear()
    if _core.is_initialized():
        global_process_set.ranks = list(range(_core.size()))


def is_initialized() -> bool:
    return _core.is_initialized()


def _require_init() -> None:
    if not _core.is_initialized():
        raise ValueError("dtrain has not been initialized; use hvd.init() (dtrain.torch.init()) first")


def size() -> int:
    """The number of ranks in the job."""
    _require_init()
    return _core.size()


def rank() -> int:
    """This process's rank, 0 to size() - 1."""
    _require_init()
    return _core.rank()


def local_size() -> int:
    """The number of ranks on this host."""
    _require_init()
    return _core.local_size()


def local_rank() -> int:
    """This process's rank among those on its host: the GPU to pin it to."""
    _require_init()
    return _core.local_rank()


def cross_size() -> int:
    """The number of hosts that have a rank with this local rank."""
    _require_init()
    return _core.cross_size()


def cross_rank() -> int:
    """This host's rank among the hosts."""
    _require_init()
    return _core.cross_rank()


def is_homogeneous() -> bool:
    """Whether every host runs the same number of ranks."""
    _require_init()
    if _homogeneous is None:  # the runtime was started by elastic.run, not init()
        return _core.size() == _core.local_size() * _core.cross_size()
    return _homogeneous


def _launched_by_mpirun() -> bool:
    return "DTRAIN_SIZE" not in os.environ and "OMPI_COMM_WORLD_SIZE" in os.environ


def mpi_built(verbose: bool = False) -> bool:
    """dtrain always has its Open MPI engine (used when ranks are started by mpirun)."""
    return True


def gloo_built(verbose: bool = False) -> bool:
    return True


def nccl_built(verbose: bool = False) -> bool:
    """Whether collectives on CUDA tensors can go through NCCL."""
    return bool(_core.cuda_built())


def cuda_built(verbose: bool = False) -> bool:
    """Whether collectives take CUDA tensors where they are (else through host memory)."""
    return bool(_core.cuda_built())


def ddl_built(verbose: bool = False) -> bool:
    return False


def ccl_built(verbose: bool = False) -> bool:
    return False


def rocm_built(verbose: bool = False) -> bool:
    return False


def mpi_enabled() -> bool:
    """Whether this job's collectives cross hosts through Open MPI (ranks started by mpirun)."""
    return _launched_by_mpirun()


def gloo_enabled() -> bool:
    """Whether this job's collectives cross hosts through Gloo (dtrain run's default)."""
    return not _launched_by_mpirun()


def mpi_threads_supported() -> bool:
    return _launched_by_mpirun()


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """Writes a Chrome-trace timeline of negotiation and communication to ``file_path`` (rank 0)."""
    _require_init()
    _core.start_timeline(file_path, mark_cycles)


def stop_timeline() -> None:
    """Ends the timeline; the file is complete JSON when this returns."""
    _require_init()
    _core.stop_timeline()


# ---- operations in flight ----

class _Pending:
    """What synchronize() needs of an operation: the tensors it uses (kept alive until then),
    how to turn the runtime's result into the caller's, and for a composite handle (grouped
    allgather and reducescatter) the handles it stands for."""

    def __init__(self, keep: tuple, finish: Optional[Callable] = None, parts: Optional[List[int]] = None) -> None:
        self.keep, self.finish, self.parts = keep, finish, parts


_handle_map: Dict[int, _Pending] = {}
_handle_lock = threading.Lock()
_composite_handles = itertools.count(-1, -1)  # negative: never one of the runtime's


def _auto_name(kind: str, name: Optional[str], process_set: Optional[ProcessSet] = None) -> str:
    """``name``, or the next number of ``kind`` in ``process_set``: only a set's members count
    its operations, so each set is numbered apart."""
    if name is not None:
        return name
    set_id = 0 if process_set is None else process_set.process_set_id
    with _names_lock:
        number = _name_counters[(kind, set_id)]
        _name_counters[(kind, set_id)] += 1
    return f"{kind}.noname.{number}" if set_id == 0 else f"{kind}.set{set_id}.noname.{number}"


def _remember(handle: int, keep: tuple, finish: Optional[Callable] = None) -> int:
    with _handle_lock:
        _handle_map[handle] = _Pending(keep, finish)
    return handle


def _remember_composite(parts: List[int]) -> int:
    handle = next(_composite_handles)
    with _handle_lock:
        _handle_map[handle] = _Pending((), parts=parts)
    return handle


def poll(handle: int) -> bool:
    """Whether the operation behind ``handle`` has finished (then synchronize() does not wait)."""
    with _handle_lock:
        pending = _handle_map.get(handle)
    if pending is not None and pending.parts is not None:
        return all(poll(part) for part in pending.parts)
    return _core.poll(handle)


def synchronize(handle: int):
    """Waits for the operation behind ``handle`` and returns its result.

    Raises HorovodInternalError (WorkersLostError when a peer is gone) if it failed, with the
    runtime's message naming the operation and the ranks that disagreed.
    """
    with _handle_lock:
        pending = _handle_map.get(handle)
    if pending is None:
        return None
    try:
        if pending.parts is not None:
            return [synchronize(part) for part in pending.parts]
        result = _core.wait(handle)
    finally:
        with _handle_lock:
            _handle_map.pop(handle, None)
    return pending.finish(result) if pending.finish else result


def _reduce_op(op: Optional[int], average: Optional[bool]) -> int:
    if average is not None:
        if op is not None:
            raise ValueError("dtrain: give op or the deprecated average, not both")
        warnings.warn("the average argument is deprecated: use op=hvd.Average or op=hvd.Sum", DeprecationWarning,
                      stacklevel=3)
        return Average if average else Sum
    if op is None:
        return Average
    if op == Adasum:
        raise NotImplementedError("dtrain: op=hvd.Adasum is not supported; use hvd.Average or hvd.Sum")
    if op not in _OP_NAMES:
        raise ValueError(f"dtrain: unknown reduction op {op!r} (hvd.Average, Sum, Min, Max or Product)")
    return op


def _group_names(kind: str, name: Optional[str], count: int, process_set: Optional[ProcessSet] = None) -> List[str]:
    base = _auto_name(kind, name, process_set)
    return [f"{base}.{i}" for i in range(count)]


def _check_rows(tensor: torch.Tensor, what: str) -> None:
    if tensor.dim() == 0:
        raise ValueError(f"dtrain: {what} needs a tensor with at least one dimension")


# ---- allreduce ----

def _allreduce_async(tensor: torch.Tensor, average, name, op, prescale_factor, postscale_factor, process_set,
                     in_place: bool) -> int:
    _require_init()
    runtime_set = _runtime_set(process_set)
    what = "allreduce_" if in_place else "allreduce"
    wire.check(tensor, what, reduce=True)
    op = _reduce_op(op, average)
    sent = wire.Wire(tensor, reduce=True, prescale_factor=prescale_factor, postscale_factor=postscale_factor)
    name = _auto_name("allreduce", name, process_set)
    if in_place:
        handle = _core.allreduce_async_(sent.sent, name, op, *sent.factors, runtime_set)
        return _remember(handle, (tensor, sent.sent), sent.into_place)
    handle = _core.allreduce_async(sent.sent, name, op, *sent.factors, runtime_set)
    return _remember(handle, (tensor, sent.sent), sent.result)


def allreduce_async(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                    op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                    process_set: ProcessSet = global_process_set) -> int:
    """Starts reducing ``tensor`` over the set's ranks (Average by default) into a new tensor.

    The operation is keyed by ``name``: every rank must submit it with the same shape and dtype.
    Returns a handle for poll() and synchronize(); the input is not modified.
    """
    return _allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor, process_set, False)


def allreduce_async_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
                     op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                     process_set: ProcessSet = global_process_set) -> int:
    """Starts reducing ``tensor`` over all ranks in place; returns a handle."""
    return _allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor, process_set, True)


class _AllreduceFunction(torch.autograd.Function):
    """allreduce as an autograd operation: the gradient is the same allreduce of the gradients."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.op, ctx.prescale_factor, ctx.postscale_factor = op, prescale_factor, postscale_factor
        ctx.process_set = process_set
        return synchronize(allreduce_async(tensor, name=name, op=op, prescale_factor=prescale_factor,
                                           postscale_factor=postscale_factor, process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allreduce(grad_output, op=ctx.op, prescale_factor=ctx.prescale_factor,
                         postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return grad, None, None, None, None, None


def allreduce(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
              compression: Compressor = Compression.none, op: Optional[int] = None, prescale_factor: float = 1.0,
              postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """``tensor`` reduced over all ranks (Average by default), as a new tensor.

    Differentiable: the gradient flowing back is reduced the same way.
    """
    op = _reduce_op(op, average)
    compressed, ctx = compression.compress(tensor)
    if torch.is_grad_enabled() and compressed.requires_grad:
        reduced = _AllreduceFunction.apply(compressed, name, op, prescale_factor, postscale_factor, process_set)
    else:
        reduced = synchronize(allreduce_async(compressed, name=name, op=op, prescale_factor=prescale_factor,
                                              postscale_factor=postscale_factor, process_set=process_set))
    return compression.decompress(reduced, ctx)


def allreduce_(tensor: torch.Tensor, average: Optional[bool] = None, name: Optional[str] = None,
               op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
               process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Reduces ``tensor`` over all ranks in place and returns it."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set))


def _grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor, process_set,
                             in_place: bool) -> int:
    _require_init()
    runtime_set = _runtime_set(process_set)
    tensors = list(tensors)
    if not tensors:
        raise ValueError("dtrain: grouped_allreduce needs at least one tensor")
    for tensor in tensors:
        wire.check(tensor, "grouped_allreduce", reduce=True)
    op = _reduce_op(op, average)
    sent = [wire.Wire(t, reduce=True, prescale_factor=prescale_factor, postscale_factor=postscale_factor)
            for t in tensors]
    factors = {w.factors for w in sent}
    if len(factors) > 1:  # integer and floating-point tensors scaled in one group: scale each apart
        raise ValueError("dtrain: grouped_allreduce with scale factors takes tensors that are all integer or "
                         "all floating point")
    names = _group_names("grouped_allreduce", name, len(tensors), process_set)
    handle = _core.grouped_allreduce_async([w.sent for w in sent], names, op, *sent[0].factors, in_place, runtime_set)

    def finish(results: List[torch.Tensor]) -> List[torch.Tensor]:
        return [(w.into_place if in_place else w.result)(r) for w, r in zip(sent, results)]

    return _remember(handle, tuple(tensors) + tuple(w.sent for w in sent), finish)


def grouped_allreduce_async(tensors: Sequence[torch.Tensor], average: Optional[bool] = None,
                            name: Optional[str] = None, op: Optional[int] = None, prescale_factor: float = 1.0,
                            postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set) -> int:
    """Starts reducing several tensors as one operation (none starts before every rank submitted
    all of them); synchronize() returns the results as a list."""
    return _grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor, process_set,
                                    in_place=False)


def grouped_allreduce_async_(tensors: Sequence[torch.Tensor], average: Optional[bool] = None,
                             name: Optional[str] = None, op: Optional[int] = None, prescale_factor: float = 1.0,
                             postscale_factor: float = 1.0, process_set: ProcessSet = global_process_set) -> int:
    """grouped_allreduce_async in place."""
    return _grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor, process_set,
                                    in_place=True)


class _GroupedAllreduceFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op, ctx.prescale_factor, ctx.postscale_factor = op, prescale_factor, postscale_factor
        ctx.process_set = process_set
        return tuple(synchronize(grouped_allreduce_async(tensors, name=name, op=op, prescale_factor=prescale_factor,
                                                         postscale_factor=postscale_factor,
                                                         process_set=process_set)))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grads = grouped_allreduce(list(grad_outputs), op=ctx.op, prescale_factor=ctx.prescale_factor,
                                  postscale_factor=ctx.postscale_factor, process_set=ctx.process_set)
        return (None, None, None, None, None, *grads)


def grouped_allreduce(tensors: Sequence[torch.Tensor], average: Optional[bool] = None, name: Optional[str] = None,
                      compression: Compressor = Compression.none, op: Optional[int] = None,
                      prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                      process_set: ProcessSet = global_process_set) -> List[torch.Tensor]:
    """Several tensors reduced as one operation; differentiable like allreduce."""
    op = _reduce_op(op, average)
    compressed = [compression.compress(t) for t in tensors]
    inputs = [c[0] for c in compressed]
    if torch.is_grad_enabled() and any(t.requires_grad for t in inputs):
        outputs = _GroupedAllreduceFunction.apply(name, op, prescale_factor, postscale_factor, process_set, *inputs)
    else:
        outputs = synchronize(grouped_allreduce_async(inputs, name=name, op=op, prescale_factor=prescale_factor,
                                                      postscale_factor=postscale_factor, process_set=process_set))
    return [compression.decompress(out, c[1]) for out, c in zip(outputs, compressed)]


def grouped_allreduce_(tensors: Sequence[torch.Tensor], average: Optional[bool] = None, name: Optional[str] = None,
                       op: Optional[int] = None, prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       process_set: ProcessSet = global_process_set) -> List[torch.Tensor]:
    """Several tensors reduced as one operation, in place."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))


# ---- allgather ----

def allgather_async(tensor: torch.Tensor, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Starts concatenating every rank's ``tensor`` along the first dimension (whose length may
    differ between ranks); returns a handle."""
    _require_init()
    runtime_set = _runtime_set(process_set)
    wire.check(tensor, "allgather", reduce=False)
    _check_rows(tensor, "allgather")
    sent = wire.Wire(tensor, reduce=False)
    handle = _core.allgather_async(sent.sent, _auto_name("allgather", name, process_set), runtime_set)
    return _remember(handle, (tensor, sent.sent), sent.result)


class _AllgatherFunction(torch.autograd.Function):
    """allgather as an autograd operation: each rank's gradient is its rows of the averaged
    incoming gradients (Horovod's rule)."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.rows, ctx.process_set = tensor.shape[0], process_set
        return synchronize(allgather_async(tensor, name=name, process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        rows = allgather(torch.tensor([ctx.rows], dtype=torch.int64), process_set=ctx.process_set).tolist()
        offset = sum(rows[:ctx.process_set._runtime().rank()])
        return reduced.narrow(0, offset, ctx.rows), None, None


def allgather(tensor: torch.Tensor, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Every rank's ``tensor`` concatenated along the first dimension, in rank order."""
    if torch.is_grad_enabled() and tensor.requires_grad:
        return _AllgatherFunction.apply(tensor, name, process_set)
    return synchronize(allgather_async(tensor, name=name, process_set=process_set))


def grouped_allgather_async(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                            process_set: ProcessSet = global_process_set) -> int:
    """Starts allgathers of several tensors together; synchronize() returns their results, a list."""
    names = _group_names("grouped_allgather", name, len(tensors), process_set)
    return _remember_composite([allgather_async(t, name=n, process_set=process_set) for t, n in zip(tensors, names)])


def grouped_allgather(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                      process_set: ProcessSet = global_process_set) -> List[torch.Tensor]:
    """allgather of several tensors, submitted together; differentiable like allgather."""
    names = _group_names("grouped_allgather", name, len(tensors), process_set)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return [allgather(t, name=n, process_set=process_set) for t, n in zip(tensors, names)]
    handles = [allgather_async(t, name=n, process_set=process_set) for t, n in zip(tensors, names)]
    return [synchronize(h) for h in handles]


# ---- broadcast ----

def broadcast_async(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                    process_set: ProcessSet = global_process_set) -> int:
    """Starts copying root's ``tensor`` to every rank into a new tensor; returns a handle."""
    return broadcast_async_(tensor.clone(), root_rank, name, process_set)


def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set) -> int:
    """Starts copying root's ``tensor`` into every rank's ``tensor``; returns a handle."""
    _require_init()
    runtime_set = _runtime_set(process_set)
    wire.check(tensor, "broadcast", reduce=False)
    sent = wire.Wire(tensor, reduce=False)
    handle = _core.broadcast_async_(sent.sent, int(root_rank), _auto_name("broadcast", name, process_set), runtime_set)
    return _remember(handle, (tensor, sent.sent), sent.into_place)


class _BroadcastFunction(torch.autograd.Function):
    """broadcast as an autograd operation: the root's gradient is the average of everyone's
    incoming gradients, the others' zero (Horovod's rule)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name=name, process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None


def broadcast(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
              process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Root's ``tensor`` on every rank, as a new tensor; the input is not modified."""
    if torch.is_grad_enabled() and tensor.requires_grad:
        return _BroadcastFunction.apply(tensor, root_rank, name, process_set)
    return synchronize(broadcast_async(tensor, root_rank, name=name, process_set=process_set))


def broadcast_(tensor: torch.Tensor, root_rank: int, name: Optional[str] = None,
               process_set: ProcessSet = global_process_set) -> torch.Tensor:
    """Copies root's ``tensor`` into every rank's ``tensor`` and returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# ---- alltoall ----

def _splits_list(splits) -> List[int]:
    if splits is None:
        return []
    if isinstance(splits, torch.Tensor):
        splits = splits.tolist()
    return [int(s) for s in splits]


def alltoall_async(tensor: torch.Tensor, splits=None, name: Optional[str] = None,
                   process_set: ProcessSet = global_process_set) -> int:
    """Starts sending rows of ``tensor`` to every rank (``splits[i]`` rows to rank i; equal
    shares without splits); synchronize() returns (received tensor, received splits)."""
    _require_init()
    runtime_set = _runtime_set(process_set)
    wire.check(tensor, "alltoall", reduce=False)
    _check_rows(tensor, "alltoall")
    sent = wire.Wire(tensor, reduce=False)
    handle = _core.alltoall_async(sent.sent, _splits_list(splits), _auto_name("alltoall", name, process_set),
                                  runtime_set)

    def finish(result) -> Tuple[torch.Tensor, torch.Tensor]:
        output, received = result
        return sent.result(output), torch.tensor(received, dtype=torch.int32)

    return _remember(handle, (tensor, sent.sent), finish)


class _AlltoallFunction(torch.autograd.Function):
    """alltoall as an autograd operation: the gradients go back the way the rows came."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name=name, process_set=process_set))
        ctx.received, ctx.process_set = received, process_set
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, grad_received):
        grad, _ = alltoall(grad_output, splits=ctx.received, process_set=ctx.process_set)
        return grad, None, None, None


def alltoall(tensor: torch.Tensor, splits=None, name: Optional[str] = None,
             process_set: ProcessSet = global_process_set):
    """Rows of ``tensor`` scattered to the ranks and gathered from them.

    Returns the received tensor; with ``splits`` also the rows received from each rank (an
    int32 tensor), as Horovod does.
    """
    if torch.is_grad_enabled() and tensor.requires_grad:
        output, received = _AlltoallFunction.apply(tensor, splits, name, process_set)
    else:
        output, received = synchronize(alltoall_async(tensor, splits, name=name, process_set=process_set))
    return output if splits is None else (output, received)


# ---- reducescatter ----

def reducescatter_async(tensor: torch.Tensor, name: Optional[str] = None, op: int = Average,
                        process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> int:
    """Starts reducing ``tensor`` over all ranks and scattering the result's rows: rank i keeps
    the i-th share of the first dimension (the first ranks one row more when it does not divide)."""
    _require_init()
    runtime_set = _runtime_set(process_set)
    wire.check(tensor, "reducescatter", reduce=True)
    _check_rows(tensor, "reducescatter")
    op = _reduce_op(op, None)
    sent = wire.Wire(tensor, reduce=True, prescale_factor=prescale_factor, postscale_factor=postscale_factor)
    handle = _core.reducescatter_async(sent.sent, _auto_name("reducescatter", name, process_set), op, *sent.factors,
                                       runtime_set)
    return _remember(handle, (tensor, sent.sent), sent.result)


class _ReducescatterFunction(torch.autograd.Function):
    """reducescatter as an autograd operation, with Horovod's gradient: the allgather of the
    incoming gradients, times size() for Sum."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.op, ctx.process_set = op, process_set
        return synchronize(reducescatter_async(tensor, name=name, op=op, prescale_factor=prescale_factor,
                                               postscale_factor=postscale_factor, process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = allgather(grad_output, process_set=ctx.process_set)
        if ctx.op == Sum:
            grad = grad * ctx.process_set._runtime().size()
        return grad, None, None, None, None, None


def reducescatter(tensor: torch.Tensor, name: Optional[str] = None, compression: Compressor = Compression.none,
                  op: int = Average, process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """This rank's share of ``tensor`` reduced over all ranks (Average by default)."""
    compressed, ctx = compression.compress(tensor)
    if torch.is_grad_enabled() and compressed.requires_grad:
        output = _ReducescatterFunction.apply(compressed, name, op, prescale_factor, postscale_factor, process_set)
    else:
        output = synchronize(reducescatter_async(compressed, name=name, op=op, prescale_factor=prescale_factor,
                                                 postscale_factor=postscale_factor, process_set=process_set))
    return compression.decompress(output, ctx)


def grouped_reducescatter_async(tensors: Sequence[torch.Tensor], name: Optional[str] = None, op: int = Average,
                                process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> int:
    """Starts reducescatters of several tensors together; synchronize() returns their results, a list."""
    names = _group_names("grouped_reducescatter", name, len(tensors), process_set)
    return _remember_composite([reducescatter_async(t, n, op, process_set, prescale_factor, postscale_factor)
                                for t, n in zip(tensors, names)])


def grouped_reducescatter(tensors: Sequence[torch.Tensor], name: Optional[str] = None,
                          compression: Compressor = Compression.none, op: int = Average,
                          process_set: ProcessSet = global_process_set, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0) -> List[torch.Tensor]:
    """reducescatter of several tensors, submitted together; differentiable like reducescatter."""
    names = _group_names("grouped_reducescatter", name, len(tensors), process_set)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return [reducescatter(t, n, compression, op, process_set, prescale_factor, postscale_factor)
                for t, n in zip(tensors, names)]
    compressed = [compression.compress(t) for t in tensors]
    handles = [reducescatter_async(c[0], n, op, process_set, prescale_factor, postscale_factor)
               for c, n in zip(compressed, names)]
    return [compression.decompress(synchronize(h), c[1]) for h, c in zip(handles, compressed)]


# ---- without tensors ----

def barrier(process_set: ProcessSet = global_process_set) -> None:
    """Returns once every rank of the set has called it."""
    _require_init()
    _core.barrier(_runtime_set(process_set))


def join(device: int = -1) -> int:
    """Declares this rank out of data: until every rank has joined, its runtime answers the
    others' allreduces with zeros. Returns the rank that joined last."""
    _require_init()
    return _core.join()


def broadcast_object(obj, root_rank: int = 0, name: Optional[str] = None,
                     process_set: ProcessSet = global_process_set):
    """Root's ``obj`` (anything picklable) on every rank."""
    _require_init()
    runtime_set = _runtime_set(process_set)
    payload = pickle.dumps(obj) if rank() == root_rank else b""
    return pickle.loads(_core.broadcast_object(payload, int(root_rank),
                                               _auto_name("broadcast_object", name, process_set), runtime_set))


def allgather_object(obj, name: Optional[str] = None, process_set: ProcessSet = global_process_set) -> list:
    """Every rank's ``obj`` (anything picklable), as a list in rank order."""
    _require_init()
    runtime_set = _runtime_set(process_set)
    gathered = _core.allgather_object(pickle.dumps(obj), _auto_name("allgather_object", name, process_set),
                                      runtime_set)
    return [pickle.loads(item) for item in gathered]
