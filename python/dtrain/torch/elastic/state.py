"""What an elastic training loop must not lose, and how it is saved, restored and synced."""
import copy
from typing import Any, Callable, Dict, List, Optional

import torch

from dtrain.torch import _core, collectives
from dtrain.torch.functions import broadcast_optimizer_state, broadcast_parameters


class State(_core.State):
    """The base of elastic states: ``commit()`` saves in memory and asks whether workers wait
    to join (every rank must commit at the same steps); ``restore()`` goes back to the last
    save; ``sync()`` makes every rank's state rank 0's. Subclasses say what save, restore and
    sync mean for their parts.
    """

    def __init__(self) -> None:
        _core.State.__init__(self)
        self._reset_callbacks: List[Callable[[], None]] = []
        self.on_reset(self._world_changed)

    def register_reset_callbacks(self, callbacks: List[Callable[[], None]]) -> None:
        """Functions called (without arguments) after each new world is formed, before sync():
        e.g. to scale the learning rate with the new size."""
        self._reset_callbacks.extend(callbacks)

    def _world_changed(self, round: int, previous_size: int, size: int, restored: bool, reason: str) -> None:
        # Ranks of the new world number their unnamed operations afresh, as new workers do. Its
        # runtime has no process sets: a reset callback adds them again.
        collectives._reset_names()
        collectives._forget_process_sets()
        collectives._homogeneous = None
        for callback in self._reset_callbacks:
            callback()

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError


class ObjectState(State):
    """A state of plain attributes (``ObjectState(epoch=0, batch=0)`` gives ``state.epoch``):
    saved as deep copies, synced by broadcasting rank 0's."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        self._attributes = sorted(kwargs)
        for name, value in kwargs.items():
            setattr(self, name, value)
        self._saved: Dict[str, Any] = {}
        self.save()

    def _values(self) -> Dict[str, Any]:
        return {name: getattr(self, name) for name in self._attributes}

    def save(self) -> None:
        self._saved = copy.deepcopy(self._values())

    def restore(self) -> None:
        for name, value in copy.deepcopy(self._saved).items():
            setattr(self, name, value)

    def sync(self) -> None:
        if self._attributes:
            values = collectives.broadcast_object(self._values(), 0, name="elastic.state.attributes")
            for name, value in values.items():
                setattr(self, name, value)


class TorchState(ObjectState):
    """A model, an optimizer and attributes (samplers among them: anything with state_dict()
    and load_state_dict() is kept through those), as ``hvd.elastic.TorchState(model,
    optimizer, epoch=0, batch=0)``."""

    def __init__(self, model: Optional[torch.nn.Module] = None, optimizer: Optional[torch.optim.Optimizer] = None,
                 **kwargs: Any) -> None:
        self.model = model
        self.optimizer = optimizer
        self._stateful = {name: value for name, value in kwargs.items() if _has_state_dict(value)}
        plain = {name: value for name, value in kwargs.items() if name not in self._stateful}
        for name, value in self._stateful.items():
            setattr(self, name, value)
        self._saved_model: Optional[Dict[str, torch.Tensor]] = None
        self._saved_optimizer: Optional[dict] = None
        self._saved_stateful: Dict[str, Any] = {}
        super().__init__(**plain)

    def save(self) -> None:
        if self.model is not None:
            self._saved_model = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
        self._saved_stateful = {name: copy.deepcopy(obj.state_dict()) for name, obj in self._stateful.items()}
        super().save()

    def restore(self) -> None:
        if self.model is not None and self._saved_model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None and self._saved_optimizer is not None:
            self.optimizer.load_state_dict(copy.deepcopy(self._saved_optimizer))
        for name, saved in self._saved_stateful.items():
            self._stateful[name].load_state_dict(copy.deepcopy(saved))
        super().restore()

    def sync(self) -> None:
        if self.model is not None:
            broadcast_parameters(self.model.state_dict(), root_rank=0, prefix="elastic.")
        if self.optimizer is not None:
            broadcast_optimizer_state(self.optimizer, root_rank=0, prefix="elastic.")
        for name, obj in sorted(self._stateful.items()):
            obj.load_state_dict(collectives.broadcast_object(obj.state_dict(), 0, name=f"elastic.state.{name}"))
        super().sync()


def _has_state_dict(value: Any) -> bool:
    return callable(getattr(value, "state_dict", None)) and callable(getattr(value, "load_state_dict", None))
