"""Horovod's ``ElasticSampler``: an epoch's samples dealt to a world whose size may change."""
import math
from typing import Dict, Iterator, List

import torch
from torch.utils.data import Dataset, Sampler

from dtrain.torch import collectives


class ElasticSampler(Sampler):
    """Each rank's share of what remains of the epoch. All ranks shuffle the dataset alike
    (from ``seed`` and the epoch); ``record_batch`` after every step marks the samples the
    whole world consumed, so after a change of the world the rest of the epoch is dealt out
    again to the ranks there are: no sample is skipped or seen twice within an epoch (the last
    shares are padded by wrapping around, as DistributedSampler pads).
    """

    def __init__(self, dataset: Dataset, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """Starts ``epoch`` from its first sample."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """After step ``batch_idx`` of this epoch's loop: every rank consumed ``batch_size`` samples."""
        self.record_indices(batch_size * self.num_replicas)

    def record_indices(self, count: int) -> None:
        self.processed_num = min(len(self.dataset), self.processed_num + count)

    def reset(self) -> None:
        """Reshards what remains of the epoch for the current world (elastic.run calls it through
        the state's sync)."""
        initialized = collectives.is_initialized()
        self.num_replicas = collectives.size() if initialized else 1
        self.rank = collectives.rank() if initialized else 0
        order = self._epoch_order()
        remaining = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(remaining) / self.num_replicas)) if remaining else 0
        total = self.num_samples * self.num_replicas
        padded = remaining + remaining[:max(0, total - len(remaining))]
        while len(padded) < total:  # fewer remaining samples than ranks
            padded += remaining[:total - len(padded)]
        self.indices = padded[self.rank:total:self.num_replicas]

    def _epoch_order(self) -> List[int]:
        if not self.shuffle:
            return list(range(len(self.dataset)))
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        return torch.randperm(len(self.dataset), generator=generator).tolist()

    def state_dict(self) -> Dict[str, int]:
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state: Dict[str, int]) -> None:
        self.epoch = state["epoch"]
        self.processed_num = state["processed_num"]
        self.reset()

    def __iter__(self) -> Iterator[int]:
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples
