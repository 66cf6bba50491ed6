"""ZeRO's split of the parameters among ranks for ``DistributedOptimizer(sharding=...)``: which
rank owns each parameter, and the collectives that bring gradients to their owners and the
stepped parameters from them.

Gradients and parameters travel in one flat buffer per dtype and device, rank 0's parameters
first, then rank 1's, and so on. For the reducescatter of gradients each rank's segment is
padded to the longest, so that every owner receives exactly its own parameters' gradients.
"""
import contextlib
import heapq
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence

import torch

from dtrain.torch.collectives import allgather_async, alltoall, reducescatter_async, size, synchronize

MODES = (None, "optimizer_state", "gradients")

Gradient = Callable[[torch.Tensor], Optional[torch.Tensor]]


def assign_owners(sizes: Sequence[int], world_size: int) -> List[int]:
    """The owner rank of each of ``sizes`` (numbers of elements): largest first, each to the
    rank owning the fewest elements so far (ties: the lowest rank; equal sizes keep their
    order). Every rank computes the same from the same sizes."""
    loads = [(0, rank) for rank in range(world_size)]  # a heap: the lightest, then the lowest rank
    owners = [0] * len(sizes)
    for index in sorted(range(len(sizes)), key=lambda i: -sizes[i]):  # stable: ties keep their order
        load, rank = heapq.heappop(loads)
        owners[index] = rank
        heapq.heappush(loads, (load + sizes[index], rank))
    return owners


class _Buffer:
    """The parameters of one dtype and device, by owner: what one flat buffer holds."""

    def __init__(self, label: str, like: torch.Tensor, world_size: int) -> None:
        self.label = label
        self.dtype, self.device = like.dtype, like.device
        self.members: List[List[torch.Tensor]] = [[] for _ in range(world_size)]

    def length(self, owner: int) -> int:
        return sum(p.numel() for p in self.members[owner])

    def segment(self) -> int:
        """The length of every owner's share of the reducescatter: the longest owner's."""
        return max(self.length(owner) for owner in range(len(self.members)))

    def pack_gradients(self, gradient: Gradient) -> torch.Tensor:
        segment = self.segment()
        flat = torch.zeros(len(self.members) * segment, dtype=self.dtype, device=self.device)
        for owner, members in enumerate(self.members):
            offset = owner * segment
            for p in members:
                grad = gradient(p)
                if grad is not None:  # none on this rank: it contributes zeros
                    flat.narrow(0, offset, p.numel()).copy_(grad.reshape(-1))
                offset += p.numel()
        return flat

    def unpack_gradients(self, mine: torch.Tensor, rank: int) -> None:
        offset = 0
        for p in self.members[rank]:
            reduced = mine.narrow(0, offset, p.numel()).view_as(p)
            if p.grad is None:
                p.grad = reduced.clone()
            else:
                p.grad.copy_(reduced)
            offset += p.numel()
        for owner, members in enumerate(self.members):
            if owner != rank:
                for p in members:
                    p.grad = None  # the owner holds it reduced: this rank's copy is freed

    def pack_parameters(self, rank: int) -> torch.Tensor:
        owned = [p.detach().reshape(-1) for p in self.members[rank]]
        if not owned:
            return torch.empty(0, dtype=self.dtype, device=self.device)
        return torch.cat(owned)

    def unpack_parameters(self, gathered: torch.Tensor, rank: int) -> None:
        offset = 0
        for owner, members in enumerate(self.members):
            for p in members:
                if owner != rank:
                    p.copy_(gathered.narrow(0, offset, p.numel()).view_as(p))
                offset += p.numel()


def _buffers(parameters: Sequence[torch.Tensor], owners: Sequence[int], world_size: int) -> List[_Buffer]:
    """One buffer per dtype and device, in the order of their first parameter, so that every
    rank lists them alike. Labels name the device's type, not its index: ranks on different
    GPUs of a host must still agree on the collectives' names."""
    by_kind: Dict[tuple, _Buffer] = {}
    labels: List[str] = []
    for p, owner in zip(parameters, owners):
        kind = (p.dtype, p.device)
        if kind not in by_kind:
            label = f"{str(p.dtype).replace('torch.', '')}.{p.device.type}"
            repeats = labels.count(label)  # one model over several devices of a type
            labels.append(label)
            by_kind[kind] = _Buffer(label if repeats == 0 else f"{label}.{repeats}", p, world_size)
        by_kind[kind].members[owner].append(p)
    return list(by_kind.values())


class Partition:
    """The owners of ``parameters`` (in param_groups' order) in a world of ``world_size``, as
    seen from ``rank``. Frozen parameters have owners too, so that freezing or unfreezing one
    moves no other parameter (nor its optimizer state) to another rank; only the parameters
    that require a gradient travel."""

    def __init__(self, parameters: Sequence[torch.Tensor], world_size: int, rank: int) -> None:
        self.rank = rank
        self.world_size = world_size
        owners = assign_owners([p.numel() for p in parameters], world_size)
        self._owner = {p: owner for p, owner in zip(parameters, owners)}

    def _buffers(self, only_trainable: bool) -> List[_Buffer]:
        """The flat buffers of the parameters (those that require a gradient now, or all)."""
        chosen = [p for p in self._owner if p.requires_grad or not only_trainable]
        buffers = _buffers(chosen, [self._owner[p] for p in chosen], self.world_size)
        return [b for b in buffers if b.segment() > 0]

    def owns(self, p: torch.Tensor) -> bool:
        return self._owner.get(p) == self.rank

    def foreign(self) -> List[torch.Tensor]:
        """The parameters other ranks own."""
        return [p for p, owner in self._owner.items() if owner != self.rank]

    def reduce_scatter_gradients(self, gradient: Gradient, op: int, prescale_factor: float,
                                 postscale_factor: float) -> None:
        """Leaves each rank its own parameters' gradients reduced over all ranks and frees the
        gradients of the others. ``gradient(p)`` is p's dense local gradient or None."""
        buffers = self._buffers(only_trainable=True)
        handles = [reducescatter_async(b.pack_gradients(gradient), name=f"zero.reducescatter.{b.label}", op=op,
                                       prescale_factor=prescale_factor, postscale_factor=postscale_factor)
                   for b in buffers]
        for b, handle in zip(buffers, handles):
            b.unpack_gradients(synchronize(handle), self.rank)

    def allgather_parameters(self) -> None:
        """Copies every owner's parameter values to every rank: frozen ones too, since an
        optimizer still steps a frozen parameter whose gradient is zeros rather than None
        (momentum, weight decay), and only its owner did."""
        with torch.no_grad():
            buffers = self._buffers(only_trainable=False)
            handles = [allgather_async(b.pack_parameters(self.rank), name=f"zero.allgather.{b.label}")
                       for b in buffers]
            for b, handle in zip(buffers, handles):
                b.unpack_parameters(synchronize(handle), self.rank)


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
