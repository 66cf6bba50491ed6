"""Elastic training in Horovod's shape: ``@hvd.elastic.run`` around the training function,
a ``TorchState`` holding what must survive a change of the world, an ``ElasticSampler``.

Under ``dtrain run --min-np N --max-np M`` a lost worker makes every survivor's pending
collective fail with WorkersLostError; ``run`` then forms the next world, restores the state's
last commit, calls the reset callbacks, syncs the state from rank 0 and calls the function
again. Workers waiting to join make ``commit()`` raise HostsUpdatedInterrupt on every rank,
and the world grows without a restore. Outside an elastic job ``run`` is init(), sync() and
the function.
"""
import functools
from typing import Any, Callable

from dtrain.common.exceptions import HorovodInternalError, HostsUpdatedInterrupt, WorkersLostError
from dtrain.torch import _core
from dtrain.torch.elastic.sampler import ElasticSampler
from dtrain.torch.elastic.state import ObjectState, State, TorchState

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler", "HorovodInternalError",
           "HostsUpdatedInterrupt", "WorkersLostError", "enabled"]


def enabled() -> bool:
    """Whether ``dtrain run --min-np/--max-np`` started this process as an elastic worker."""
    return bool(_core.elastic_enabled())


def run(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates ``func(state, *args, **kwargs)`` so that it runs to its end across changes of
    the world; returns what ``func`` returned on its last (complete) call."""

    @functools.wraps(func)
    def wrapper(state: State, *args, **kwargs):
        if not isinstance(state, State):
            raise TypeError(f"dtrain: elastic.run's function takes a dtrain.torch.elastic.State first, "
                            f"got {type(state).__name__}")
        result = []

        def train() -> None:
            result.clear()
            result.append(func(state, *args, **kwargs))

        _core.run_elastic(state, train)
        return result[0] if result else None

    return wrapper
