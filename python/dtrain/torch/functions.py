"""Starting every rank from the same place: broadcast of parameters and optimizer state."""
from typing import Iterable, Mapping, Optional, Tuple, Union

import torch

from dtrain.torch.collectives import (ProcessSet, _check_process_set, broadcast_async_, broadcast_object,
                                      global_process_set, synchronize)

Parameters = Union[Mapping[str, torch.Tensor], Iterable[Tuple[str, torch.Tensor]], Iterable[torch.Tensor]]


def _named(params: Parameters):
    if isinstance(params, Mapping):
        return sorted(params.items())
    named = []
    for i, item in enumerate(params):
        if isinstance(item, tuple):
            named.append(item)
        elif isinstance(item, torch.Tensor):
            named.append((f"tensor.{i}", item))
        else:
            raise ValueError(f"dtrain: broadcast_parameters takes a state_dict, (name, tensor) pairs or tensors; "
                             f"item {i} is a {type(item).__name__}")
    return named


def broadcast_parameters(params: Parameters, root_rank: int, process_set: ProcessSet = global_process_set, *,
                         prefix: Optional[str] = None) -> None:
    """Copies root's values into every rank's tensors, in place.

    ``params`` is a ``state_dict()``, ``named_parameters()`` or a list of tensors; every rank
    passes the same names in the same order.
    """
    _check_process_set(process_set)
    handles = []
    with torch.no_grad():
        for name, tensor in _named(params):
            if tensor is None:
                continue
            label = f"broadcast_parameters.{prefix or ''}{name}"
            handles.append(broadcast_async_(tensor, root_rank, name=label, process_set=process_set))
        for handle in handles:
            synchronize(handle)


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int,
                              process_set: ProcessSet = global_process_set, *, prefix: Optional[str] = None) -> None:
    """Makes every rank's optimizer state and options (learning rate, momentum, ...) root's.

    Works for any optimizer whose ``state_dict()`` describes it (SGD, Adam, AdamW, RMSprop,
    Adagrad, ...): root's state dict goes to every rank and is loaded there, onto the devices
    of that rank's parameters.
    """
    _check_process_set(process_set)
    state = broadcast_object(optimizer.state_dict(), root_rank, name=f"broadcast_optimizer_state.{prefix or ''}",
                             process_set=process_set)
    optimizer.load_state_dict(state)
