"""ZeRO's split of the parameters among ranks for ``DistributedOptimizer(sharding=...)``: which
rank owns each parameter, and the collectives that bring gradients to their owners and the
stepped parameters from them.

The parameters are cut into buckets of about ``bucket_bytes``, from the last parameter back
(roughly the order in which backward produces their gradients), so that a bucket's reduction
can start while backward still runs. A bucket travels as one flat buffer: rank 0's parameters
first, then rank 1's, and so on. For the reducescatter of gradients each rank's segment is
padded to the longest, so that every owner receives exactly its own parameters' gradients.
The rule is that of the LibTorch adapter (src/torch/parameter_shards.cc).
"""
import contextlib
import dataclasses
import heapq
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set

import torch

from dtrain.torch.collectives import allgather_async, alltoall, reducescatter_async, size, synchronize

MODES = (None, "optimizer_state", "gradients")
DEFAULT_BUCKET_BYTES = 25 * 2**20  # DDP's bucket_cap_mb

Gradient = Callable[[torch.Tensor], Optional[torch.Tensor]]


@dataclasses.dataclass(frozen=True)
class Reduction:
    """How gradients are reduce-scattered: ``gradient(p)`` is p's dense local gradient or None."""
    gradient: Gradient
    op: int
    prescale_factor: float = 1.0
    postscale_factor: float = 1.0


def assign_owners(sizes: Sequence[int], load: List[int]) -> List[int]:
    """The owner rank of each of ``sizes`` (numbers of elements): largest first, each to the
    rank with the fewest elements so far counting ``load`` (elements per rank, updated; ties:
    the lowest rank; equal sizes keep their order). Every rank computes the same from the same
    sizes and load."""
    lightest = [(elements, rank) for rank, elements in enumerate(load)]  # a heap: then the lowest rank
    heapq.heapify(lightest)
    owners = [0] * len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):  # stable: ties keep their order
        elements, rank = heapq.heappop(lightest)
        owners[index] = rank
        load[rank] = elements + sizes[index]
        heapq.heappush(lightest, (load[rank], rank))
    return owners


def cut_into_buckets(parameters: Sequence[torch.Tensor], bucket_bytes: int) -> List[List[int]]:
    """The indices of ``parameters`` by bucket, from the last parameter back, each bucket's in
    the order added: a bucket is full once it holds ``bucket_bytes`` or more, and holds one
    dtype and device."""
    buckets: List[List[int]] = []
    filled = 0
    for index in reversed(range(len(parameters))):
        p = parameters[index]
        first = parameters[buckets[-1][0]] if buckets else None
        if first is None or filled >= bucket_bytes or (p.dtype, p.device) != (first.dtype, first.device):
            buckets.append([])
            filled = 0
        buckets[-1].append(index)
        filled += p.numel() * p.element_size()
    return buckets


class _Layout:
    """Where a bucket's parameters sit in its flat buffer: each owner's in parameter order."""

    def __init__(self, by_owner: List[List[torch.Tensor]]) -> None:
        self.by_owner = by_owner
        self.segment = max(sum(p.numel() for p in members) for members in by_owner)  # every owner's, padded


class _Bucket:
    """Parameters of one dtype and device whose gradients travel together, and this step's
    reducescatter of them."""

    def __init__(self, name: str, members: List[torch.Tensor], owner: Dict[torch.Tensor, int],
                 world_size: int) -> None:
        self.name = name
        self.members = members  # in parameter order
        self._owner = owner
        self._world_size = world_size
        self._layout: Optional[_Layout] = None
        self._handle: Optional[int] = None

    @property
    def in_flight(self) -> bool:
        return self._handle is not None

    def lay_out(self, only_trainable: bool) -> _Layout:
        """The members taking part (those that require a gradient now, or all), by owner."""
        by_owner: List[List[torch.Tensor]] = [[] for _ in range(self._world_size)]
        for p in self.members:
            if p.requires_grad or not only_trainable:
                by_owner[self._owner[p]].append(p)
        return _Layout(by_owner)

    def start(self, reduction: Reduction) -> None:
        """Starts the reducescatter of the trainable members' gradients (zeros for a member
        without one on this rank, so that no rank waits for it)."""
        layout = self.lay_out(only_trainable=True)
        if layout.segment == 0:
            return  # nothing in it trains now
        self._layout = layout
        self._handle = reducescatter_async(self._pack(layout, reduction.gradient), name=f"zero.gradients.{self.name}",
                                           op=reduction.op, prescale_factor=reduction.prescale_factor,
                                           postscale_factor=reduction.postscale_factor)

    def _pack(self, layout: _Layout, gradient: Gradient) -> torch.Tensor:
        first = self.members[0]
        flat = torch.zeros(self._world_size * layout.segment, dtype=first.dtype, device=first.device)
        for owner, members in enumerate(layout.by_owner):
            offset = owner * layout.segment
            for p in members:
                grad = gradient(p)
                if grad is not None:
                    flat.narrow(0, offset, p.numel()).copy_(grad.reshape(-1))
                offset += p.numel()
        return flat

    def finish(self, rank: int) -> None:
        """Waits for the reducescatter, if started: ``rank``'s parameters get their reduced
        gradients, the others' are freed."""
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
        mine = synchronize(handle)
        offset = 0
        for p in self._layout.by_owner[rank]:
            reduced = mine.narrow(0, offset, p.numel()).view_as(p)
            if p.grad is None or p.grad.is_sparse:
                p.grad = reduced.clone()
            else:
                p.grad.copy_(reduced)
            offset += p.numel()
        for owner, members in enumerate(self._layout.by_owner):
            if owner != rank:
                for p in members:
                    p.grad = None  # the owner holds it reduced: this rank's copy is freed

    def abandon(self) -> None:
        """Waits for the reducescatter in flight, ignoring its failure, and forgets it."""
        handle, self._handle = self._handle, None
        if handle is not None:
            with contextlib.suppress(Exception):  # the step is given up: its errors were reported
                synchronize(handle)

    def start_allgather(self, rank: int) -> Optional[int]:
        """Starts sending ``rank``'s values of its members (frozen ones too) to every rank;
        None where the members hold no value at all."""
        layout = self.lay_out(only_trainable=False)
        if layout.segment == 0:
            return None
        owned = [p.detach().reshape(-1) for p in layout.by_owner[rank]]
        first = self.members[0]
        mine = torch.cat(owned) if owned else torch.empty(0, dtype=first.dtype, device=first.device)
        return allgather_async(mine, name=f"zero.parameters.{self.name}")

    def finish_allgather(self, handle: Optional[int], rank: int) -> None:
        """Copies the other owners' values, received through ``handle``, into the members."""
        if handle is None:
            return
        gathered = synchronize(handle)
        offset = 0
        for owner, members in enumerate(self.lay_out(only_trainable=False).by_owner):
            for p in members:
                if owner != rank:
                    p.copy_(gathered.narrow(0, offset, p.numel()).view_as(p))
                offset += p.numel()


class Partition:
    """The owners of ``parameters`` (in param_groups' order) in a world of ``world_size``, as
    seen from ``rank``, and their buckets of about ``bucket_bytes``. Frozen parameters have
    owners too, so that freezing or unfreezing one moves no other parameter (nor its optimizer
    state) to another rank; only the parameters that require a gradient are reduced. ``label``
    (the first parameter's name) keeps two optimizers' collectives apart."""

    def __init__(self, parameters: Sequence[torch.Tensor], world_size: int, rank: int, bucket_bytes: int,
                 reduction: Reduction, label: str) -> None:
        self.rank = rank
        self.world_size = world_size
        self._reduction = reduction
        self._owner: Dict[torch.Tensor, int] = {}
        self._buckets: List[_Bucket] = []
        self._bucket_of: Dict[torch.Tensor, _Bucket] = {}
        self._ready: Set[torch.Tensor] = set()  # this step: the gradient is complete
        load = [0] * world_size  # carried from bucket to bucket
        for index, indices in enumerate(cut_into_buckets(parameters, bucket_bytes)):
            owners = assign_owners([parameters[i].numel() for i in indices], load)
            self._owner.update((parameters[i], owner) for i, owner in zip(indices, owners))
            bucket = _Bucket(f"{label}.{index}", [parameters[i] for i in reversed(indices)], self._owner, world_size)
            self._buckets.append(bucket)
            self._bucket_of.update((p, bucket) for p in bucket.members)

    def owns(self, p: torch.Tensor) -> bool:
        return self._owner.get(p) == self.rank

    def foreign(self) -> List[torch.Tensor]:
        """The parameters other ranks own."""
        return [p for p, owner in self._owner.items() if owner != self.rank]

    def in_flight(self) -> bool:
        """Whether a bucket's reducescatter was started and not finished."""
        return any(bucket.in_flight for bucket in self._buckets)

    def gradient_ready(self, p: torch.Tensor) -> None:
        """Backward has produced this step's last gradient of ``p``: a bucket whose trainable
        members all have theirs starts its reducescatter."""
        self._ready.add(p)
        bucket = self._bucket_of[p]
        if not bucket.in_flight and all(q in self._ready for q in bucket.members if q.requires_grad):
            bucket.start(self._reduction)

    def reduce_scatter_gradients(self) -> None:
        """Starts the buckets that have not started and waits for all: each rank is left with
        its own parameters' gradients reduced over all ranks, the others' are freed. The first
        failure is raised once every bucket has finished."""
        for bucket in self._buckets:
            if not bucket.in_flight:
                bucket.start(self._reduction)
        failure: Optional[Exception] = None
        for bucket in self._buckets:
            try:
                bucket.finish(self.rank)
            except Exception as error:  # raised below, as it is (a WorkersLostError stays one)
                failure = failure or error
        self._ready.clear()
        if failure is not None:
            raise failure

    def abandon_step(self) -> None:
        """Waits for the reductions in flight, ignoring their failures, and forgets the step's."""
        for bucket in self._buckets:
            bucket.abandon()
        self._ready.clear()

    def allgather_parameters(self) -> None:
        """Copies every owner's parameter values to every rank: frozen ones too, since an
        optimizer still steps a frozen parameter whose gradient is zeros rather than None
        (momentum, weight decay), and only its owner did."""
        with torch.no_grad():
            handles = [bucket.start_allgather(self.rank) for bucket in self._buckets]
            for bucket, handle in zip(self._buckets, handles):
                bucket.finish_allgather(handle, self.rank)


@contextlib.contextmanager
def gradients_set_aside(parameters: Iterable[torch.Tensor]) -> Iterator[None]:
    """Within it, ``parameters`` have no gradient, so an optimizer's step skips them."""
    kept = [(p, p.grad) for p in parameters if p.grad is not None]
    for p, _ in kept:
        p.grad = None
    try:
        yield
    finally:
        for p, grad in kept:
            p.grad = grad


def gather_bytes(payload: bytes, root: int, name: str) -> List[bytes]:
    """Collective: every rank's ``payload`` on ``root``, in rank order (empty elsewhere): the
    bytes travel to ``root`` only."""
    sent = torch.frombuffer(bytearray(payload), dtype=torch.uint8) if payload else torch.empty(0, dtype=torch.uint8)
    splits = [0] * size()
    splits[root] = sent.numel()
    received, counts = alltoall(sent, splits=splits, name=name)
    data, offset, result = received.numpy().tobytes(), 0, []
    for count in counts.tolist():
        result.append(data[offset:offset + count])
        offset += count
    return result
