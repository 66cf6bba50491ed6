"""Horovod's ``DistributedOptimizer``: any torch.optim optimizer, its gradients averaged over all
ranks while backward is still running.

A hook on each parameter fires the moment backward has accumulated that parameter's gradient
and starts its allreduce in the runtime (named after the parameter, so ranks match them up);
communication then overlaps the rest of backward, and the runtime fuses small gradients into
one transfer. ``step()`` waits for the reductions that are still in flight, then steps.

With ``sharding`` (ZeRO's stages 1 and 2) each rank steps only the parameters it owns and keeps
optimizer state only for them; the stepped parameters are then allgathered (dtrain.torch.sharding).
"""
import contextlib
import io
import warnings
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

import torch

from dtrain.torch import sharding as zero
from dtrain.torch.collectives import (Average, ProcessSet, Sum, _check_process_set, _reduce_op,
                                      allreduce_async_, global_process_set, grouped_allreduce_async_, rank,
                                      size, synchronize)
from dtrain.torch.compression import Compression, Compressor

_TOO_MANY_PASSES = ("dtrain: gradients were computed more than backward_passes_per_step times before step(); "
                    "raise backward_passes_per_step to accumulate them locally")


class _DistributedOptimizer(torch.optim.Optimizer):
    """The methods mixed into the wrapped optimizer's class (see DistributedOptimizer)."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, sharding, sharding_bucket_bytes, process_set):
        super(self.__class__, self).__init__(params)
        self._process_set = process_set
        self._sharding = sharding
        self._sharding_bucket_bytes = sharding_bucket_bytes
        self._partition_of: Optional[Tuple[tuple, zero.Partition]] = None  # (world and parameters, owners)
        self._unreduced = False  # sharding="gradients": a backward pass ran since the last synchronize()
        self._compression = compression
        self._op = op
        self._gradient_predivide_factor = gradient_predivide_factor
        self._sparse_as_dense = sparse_as_dense
        self.backward_passes_per_step = backward_passes_per_step
        self._parameter_names = self._names_of(named_parameters)
        self._groups = self._parameter_groups(groups)
        self._group_of = {p: g for g, members in enumerate(self._groups) for p in members}
        self._allreduce_delay = {p: backward_passes_per_step for p in self._all_parameters()}
        # p -> (handle, compression context) for a single allreduce; for a grouped one the
        # group's index in the handle's place and its members in _group_handles.
        self._handles: Dict[torch.Tensor, tuple] = {}
        self._group_ready: Dict[int, List[torch.Tensor]] = {}
        self._group_handles: Dict[int, Tuple[int, List[tuple]]] = {}
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True
        self._hook_handles = []
        self._register_hooks()

    # ---- set-up ----

    def _all_parameters(self) -> List[torch.Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def _names_of(self, named_parameters) -> Dict[torch.Tensor, str]:
        if named_parameters is None:
            return {p: f"allreduce.noname.{g}.{i}" for g, group in enumerate(self.param_groups)
                    for i, p in enumerate(group["params"])}
        named = list(named_parameters)
        if any(not isinstance(item, tuple) or len(item) != 2 for item in named):
            raise ValueError("dtrain: DistributedOptimizer's named_parameters must be (name, parameter) pairs, "
                             "e.g. model.named_parameters()")
        names = [name for name, _ in named]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"dtrain: DistributedOptimizer: parameter names appear more than once: {duplicates}")
        by_parameter = {p: f"allreduce.{name}" for name, p in named}
        unnamed = [f"param_groups[{g}]['params'][{i}]" for g, group in enumerate(self.param_groups)
                   for i, p in enumerate(group["params"]) if p.requires_grad and p not in by_parameter]
        if unnamed:
            raise ValueError("dtrain: DistributedOptimizer: the optimizer updates parameters missing from "
                             f"named_parameters (they would train on each rank alone): {', '.join(unnamed)}")
        return by_parameter

    def _parameter_groups(self, groups) -> List[List[torch.Tensor]]:
        if groups is None or groups == 0:
            return []
        parameters = [p for p in self._all_parameters() if p.requires_grad]
        if isinstance(groups, int):
            if groups < 0:
                raise ValueError(f"dtrain: DistributedOptimizer: groups must be positive, got {groups}")
            size = -(-len(parameters) // groups)
            return [parameters[i:i + size] for i in range(0, len(parameters), size)]
        known = set(parameters)
        result = []
        for members in groups:
            members = list(members)
            strangers = [p for p in members if p not in known]
            if strangers:
                raise ValueError("dtrain: DistributedOptimizer: groups name parameters the optimizer does not update")
            result.append(members)
        return result

    def _register_hooks(self) -> None:
        for p in self._all_parameters():
            if not p.requires_grad:
                continue
            self._requires_update.add(p)
            # Runs once p.grad holds the sum of this backward pass.
            self._hook_handles.append(p.register_post_accumulate_grad_hook(self._make_hook(p)))

    # ---- during backward ----

    def _make_hook(self, p: torch.Tensor):
        def hook(*unused):
            self._synchronized = False
            if self._sharding == "gradients":
                self._count_pass(p)
                return
            handle = self._handles.get(p)
            if handle is not None and handle[0] is not None and self._allreduce_delay[p] <= 0:
                raise AssertionError(_TOO_MANY_PASSES)
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] == 0:
                self._submit(p)
            else:
                self._handles[p] = (None, None)
        return hook

    def _count_pass(self, p: torch.Tensor) -> None:
        """sharding="gradients": p's gradient is complete at its last pass of the step; its
        bucket is reduce-scattered once all the bucket's gradients are."""
        if self._allreduce_delay[p] <= 0:
            raise AssertionError(_TOO_MANY_PASSES)
        self._allreduce_delay[p] -= 1
        self._unreduced = True
        if self._allreduce_delay[p] == 0:
            self._partition(during_backward=True).gradient_ready(p)

    def _scale_factors(self) -> Tuple[float, float]:
        if self._op == Average and self._gradient_predivide_factor != 1.0:
            return 1.0 / self._gradient_predivide_factor, self._gradient_predivide_factor
        return 1.0, 1.0

    def _gradient(self, p: torch.Tensor) -> torch.Tensor:
        if p.grad is None:  # no gradient on this rank: it takes part with zeros, so no rank waits
            p.grad = torch.zeros_like(p)
        return self._dense_gradient(p)

    def _dense_gradient(self, p: torch.Tensor) -> Optional[torch.Tensor]:
        """p's gradient (a sparse one made dense in place), or None."""
        if p.grad is not None and p.grad.is_sparse:
            if not self._sparse_as_dense:
                raise NotImplementedError(
                    "dtrain: sparse gradients are reduced as dense ones only: pass sparse_as_dense=True")
            p.grad = p.grad.to_dense()
        return p.grad

    def _submit(self, p: torch.Tensor) -> None:
        """Starts reducing p's gradient, or, in a group, once every member's gradient is ready."""
        group = self._group_of.get(p)
        if group is None:
            compressed, ctx = self._compression.compress(self._gradient(p))
            prescale, postscale = self._scale_factors()
            handle = allreduce_async_(compressed, name=self._parameter_names[p], op=self._op,
                                      prescale_factor=prescale, postscale_factor=postscale,
                                      process_set=self._process_set)
            self._handles[p] = (handle, (compressed, ctx))
            return
        ready = self._group_ready.setdefault(group, [])
        ready.append(p)
        self._handles[p] = (group, None)
        if len(ready) == len(self._groups[group]):
            self._submit_group(group)

    def _submit_group(self, group: int) -> None:
        members = self._groups[group]
        compressed = [self._compression.compress(self._gradient(p)) for p in members]
        prescale, postscale = self._scale_factors()
        handle = grouped_allreduce_async_([c[0] for c in compressed], name=f"allreduce.group.{group}", op=self._op,
                                          prescale_factor=prescale, postscale_factor=postscale,
                                          process_set=self._process_set)
        self._group_handles[group] = (handle, list(zip(members, compressed)))
        self._group_ready.pop(group, None)

    # ---- after backward ----

    def synchronize(self) -> None:
        """Finishes every gradient's allreduce, starting those whose hook did not fire. With
        sharding="gradients", finishes the buckets' reducescatters instead (starting those
        backward did not complete): each rank is left with its own parameters' reduced
        gradients only.

        Until the next backward pass, calling it again does nothing: gradients are reduced once.
        """
        if self._synchronized:
            return
        if self._sharding == "gradients":
            self._partition().reduce_scatter_gradients()
        else:
            self._allreduce_gradients()
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._unreduced = False
        self._synchronized = True

    def _allreduce_gradients(self) -> None:
        for p in sorted(self._requires_update - set(self._handles), key=lambda q: self._parameter_names[q]):
            self._submit(p)
        for p, (handle, _) in list(self._handles.items()):
            if handle is None:
                self._submit(p)
        for group in sorted(self._group_ready):
            self._submit_group(group)
        for p, (handle, context) in self._handles.items():
            if p in self._group_of:
                continue
            compressed, ctx = context
            synchronize(handle)
            self._install(p, compressed, ctx)
        for handle, members in self._group_handles.values():
            synchronize(handle)
            for p, (compressed, ctx) in members:
                self._install(p, compressed, ctx)
        self._handles.clear()
        self._group_handles.clear()

    def _install(self, p: torch.Tensor, reduced: torch.Tensor, ctx) -> None:
        result = self._compression.decompress(reduced, ctx)
        if result is not p.grad:
            p.grad.copy_(result)

    @contextlib.contextmanager
    def skip_synchronize(self):
        """Within it, step() only steps: for code that called synchronize() itself (e.g. to
        clip the reduced gradients)."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def _reductions_pending(self) -> bool:
        in_flight = self._partition_of is not None and self._partition_of[1].in_flight()
        return bool(self._handles or self._group_handles or self._unreduced or in_flight)

    def step(self, closure=None):
        if self._should_synchronize:
            self.synchronize()
        elif self._reductions_pending():
            raise AssertionError("dtrain: step() inside skip_synchronize() while gradients are still being reduced: "
                                 "call optimizer.synchronize() after the last backward pass first")
        if self._sharding is None:
            return super(self.__class__, self).step(closure)
        partition = self._partition()
        with zero.gradients_set_aside(partition.foreign()):
            loss = super(self.__class__, self).step(closure)
        self._drop_foreign_state(partition)
        partition.allgather_parameters()
        return loss

    def zero_grad(self, *args, **kwargs):
        if self._reductions_pending():
            raise AssertionError("dtrain: optimizer.zero_grad() was called after loss.backward() but before "
                                 "optimizer.step() or optimizer.synchronize(): the gradients are still being "
                                 "reduced into")
        return super(self.__class__, self).zero_grad(*args, **kwargs)

    # ---- sharding ----

    def _partition(self, during_backward: bool = False) -> zero.Partition:
        """The owners of the parameters and their buckets, made again when the world changed
        (an elastic resize) or the optimizer's parameters did; during backward only the world
        is compared, since every gradient's hook asks."""
        world = (size(), rank())
        if during_backward and self._partition_of is not None and self._partition_of[0][:2] == world:
            return self._partition_of[1]
        parameters = self._all_parameters()
        key = world + (tuple(id(p) for p in parameters),)
        if self._partition_of is None or self._partition_of[0] != key:
            if self._partition_of is not None:
                self._partition_of[1].abandon_step()  # its reductions belong to the old world
            reduction = zero.Reduction(self._dense_gradient, self._op, *self._scale_factors())
            partition = zero.Partition(parameters, size(), rank(), self._sharding_bucket_bytes, reduction,
                                       self._sharding_label())
            self._partition_of = (key, partition)
        return self._partition_of[1]

    def _sharding_label(self) -> str:
        """What names this optimizer's sharding collectives: its first parameter's name, so that
        two sharded optimizers stepping in one backward (a GAN's) do not meet."""
        parameters = self._all_parameters()
        return self._parameter_names[parameters[0]] if parameters else "empty"

    def _drop_foreign_state(self, partition: zero.Partition) -> None:
        """Forgets the state of parameters other ranks own (loaded from a whole checkpoint, or
        consolidated here), so that each rank keeps about 1/size() of it."""
        for p in partition.foreign():
            self.state.pop(p, None)

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Collective: every rank's shard of the optimizer state is copied to rank ``to``, whose
        ``state_dict()`` then describes every parameter, as without sharding (save it there).
        Such a state dict loads into any world size, sharded or not. Without sharding it does
        nothing."""
        if not 0 <= to < size():
            raise ValueError(f"dtrain: consolidate_state_dict: to={to} is not a rank (0 to {size() - 1})")
        if self._sharding is None:
            return
        partition = self._partition()
        self._drop_foreign_state(partition)  # each rank sends exactly its shard
        mine = {index: self.state[p] for index, p in enumerate(self._all_parameters())
                if partition.owns(p) and p in self.state}
        payload = b""
        if rank() != to:
            buffer = io.BytesIO()
            torch.save(mine, buffer)
            payload = buffer.getvalue()
        shards = zero.gather_bytes(payload, to, name=f"zero.consolidate.{self._sharding_label()}")
        if rank() != to:
            return
        full = self.state_dict()
        for shard in shards:
            if shard:
                full["state"].update(torch.load(io.BytesIO(shard), map_location="cpu"))
        self.load_state_dict(full)  # onto the parameters' devices, as a checkpoint loads


def DistributedOptimizer(optimizer: torch.optim.Optimizer,
                         named_parameters: Optional[Iterable[Tuple[str, torch.Tensor]]] = None,
                         compression: Compressor = Compression.none, backward_passes_per_step: int = 1,
                         op: int = Average, gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                         groups: Optional[Union[int, Sequence[Sequence[torch.Tensor]]]] = None,
                         sparse_as_dense: bool = False,
                         process_set: ProcessSet = global_process_set,
                         sharding: Optional[str] = None,
                         sharding_bucket_bytes: int = zero.DEFAULT_BUCKET_BYTES) -> torch.optim.Optimizer:
    """Wraps ``optimizer`` so that ``step()`` applies the gradients averaged over all ranks.

    The result is an instance of the optimizer's own class (its state_dict, param_groups and
    learning-rate schedulers work as before). ``named_parameters`` (``model.named_parameters()``)
    names each gradient's allreduce; without it parameters are numbered, which every rank must
    then do alike. ``backward_passes_per_step`` accumulates that many backward passes locally
    before one allreduce; ``groups`` (a number, or lists of parameters) reduces each group as one
    operation; ``gradient_predivide_factor`` splits the averaging into a division before the sum
    and the rest after it.

    ``process_set`` averages over that set's ranks only (each set's members train together);
    only its members make the optimizer, and it does not combine with ``sharding``.

    ``sharding`` splits the optimizer's work among the ranks (ZeRO): each rank steps only the
    parameters it owns and keeps their optimizer state only, then every rank receives the
    owners' new values. ``"optimizer_state"`` (stage 1) allreduces gradients as without it;
    ``"gradients"`` (stage 2) reduce-scatters them by buckets of about
    ``sharding_bucket_bytes``, each started as soon as backward has produced all its
    gradients, and each rank keeps only its own parameters' gradients. Owners are dealt out
    within those buckets. ``state_dict()`` is then this rank's shard:
    ``consolidate_state_dict(to)`` first makes it whole on rank ``to``.
    """
    _check_process_set(process_set)  # added, and this rank one of its members
    if process_set is not global_process_set and sharding is not None:
        raise ValueError("dtrain: DistributedOptimizer: sharding does not combine with a process_set")
    op = _reduce_op(op, None)
    _check_sharding(sharding, compression, op)
    if sharding == "gradients" and (groups or num_groups):
        raise ValueError("dtrain: DistributedOptimizer: groups do not apply with sharding='gradients', whose "
                         "buckets (sharding_bucket_bytes) group the gradients")
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("dtrain: gradient_predivide_factor needs op=hvd.Average")
    if backward_passes_per_step < 1:
        raise ValueError(f"dtrain: backward_passes_per_step must be at least 1, got {backward_passes_per_step}")
    if sharding_bucket_bytes < 1:
        raise ValueError(f"dtrain: DistributedOptimizer: sharding_bucket_bytes must be positive, "
                         f"got {sharding_bucket_bytes}")
    if num_groups:
        warnings.warn("num_groups is deprecated: use groups=", DeprecationWarning, stacklevel=2)
        groups = groups or num_groups
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__))
    distributed = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
                      gradient_predivide_factor, groups, sparse_as_dense, sharding, sharding_bucket_bytes, process_set)
    if optimizer.state:
        distributed.load_state_dict(optimizer.state_dict())
    return distributed


def _check_sharding(sharding: Optional[str], compression: Compressor, op: int) -> None:
    if sharding not in zero.MODES:
        raise ValueError(f"dtrain: DistributedOptimizer: sharding={sharding!r} is not one of "
                         f"{', '.join(repr(mode) for mode in zero.MODES)}")
    if sharding != "gradients":
        return
    if compression is not Compression.none:
        raise ValueError("dtrain: DistributedOptimizer: compression is not supported with sharding='gradients' "
                         "(use Compression.none, or sharding='optimizer_state')")
    if op not in (Average, Sum):
        raise ValueError("dtrain: DistributedOptimizer: sharding='gradients' reduces with op=hvd.Average or hvd.Sum")
