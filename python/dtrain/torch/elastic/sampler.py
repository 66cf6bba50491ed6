"""Horovod's ``ElasticSampler``: an epoch's samples dealt to a world whose size may change."""
from typing import Dict, Iterator

from torch.utils.data import Dataset, Sampler

from dtrain.torch import _core, collectives


class ElasticSampler(Sampler):
    """Each rank's share of what remains of the epoch (the adapter's ElasticSampler underneath).

    All ranks shuffle the dataset alike (from ``seed`` and the epoch); ``record_batch`` after
    every step marks the samples the whole world consumed, so after a change of the world the
    rest of the epoch is dealt out again to the ranks there are: no sample is skipped or seen
    twice within an epoch (the last shares are padded by wrapping around, as
    DistributedSampler pads).
    """

    def __init__(self, dataset: Dataset, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self._order = _core.ElasticSampler(len(dataset), seed, shuffle)
        self.reset()

    @property
    def epoch(self) -> int:
        return self._order.epoch()

    def set_epoch(self, epoch: int) -> None:
        """Starts ``epoch`` from its first sample."""
        self._order.set_epoch(epoch)
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """After step ``batch_idx`` of this epoch's loop: every rank consumed ``batch_size`` samples."""
        self._order.record_batch(batch_size, self.num_replicas)

    def reset(self) -> None:
        """Reshards what remains of the epoch for the current world (elastic.run calls it through
        the state's sync)."""
        initialized = collectives.is_initialized()
        self.num_replicas = collectives.size() if initialized else 1
        self.rank = collectives.rank() if initialized else 0
        self.indices = self._order.indices(self.rank, self.num_replicas)

    def state_dict(self) -> Dict[str, int]:
        return {"epoch": self._order.epoch(), "processed_num": self._order.consumed()}

    def load_state_dict(self, state: Dict[str, int]) -> None:
        self._order.set_position(state["epoch"], state["processed_num"])
        self.reset()

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return len(self.indices)
