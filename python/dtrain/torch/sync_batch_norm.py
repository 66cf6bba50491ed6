"""Horovod's ``SyncBatchNorm``: batch normalization whose statistics cover every rank's batch."""
import itertools

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from dtrain.torch import _core
from dtrain.torch.collectives import Sum, size

_layer_numbers = itertools.count()


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over the global batch: in training, each rank's per-channel sums,
    sums of squares and element counts are allreduced (a differentiable allreduce, so backward
    is synchronized too) and every rank normalizes with the mean and variance of all ranks'
    inputs. In evaluation, or alone, it is ``torch.nn.BatchNorm*d``. The running statistics
    follow PyTorch's rule with the global count (the unbiased variance).

    Every rank must build its SyncBatchNorm layers in the same order: a layer's collectives
    are named by its position among them.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = True,
                 track_running_stats: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self._name = f"sync_batch_norm.{next(_layer_numbers)}"

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"dtrain: SyncBatchNorm expects an input of 2 or more dimensions, got {input.dim()}")

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        if not self.training or size() == 1:
            use_batch = self.training or not self.track_running_stats
            return F.batch_norm(input, self.running_mean if not self.training or self.track_running_stats else None,
                                self.running_var if not self.training or self.track_running_stats else None,
                                self.weight, self.bias, use_batch, momentum, self.eps)
        channels = input.size(1)
        dims = [0] + list(range(2, input.dim()))
        count = input.numel() // channels
        local = torch.cat([input.sum(dims), (input * input).sum(dims),
                           torch.full((1,), float(count), dtype=input.dtype, device=input.device)])
        total = _core.allreduce_with_gradient(local, self._name, Sum)
        n = total[-1]
        mean = total[:channels] / n
        var = total[channels:2 * channels] / n - mean * mean
        if self.track_running_stats:
            with torch.no_grad():
                unbiased = var * (n / (n - 1).clamp_min(1))
                self.running_mean.mul_(1 - momentum).add_(mean.detach(), alpha=momentum)
                self.running_var.mul_(1 - momentum).add_(unbiased.detach(), alpha=momentum)
        shape = [1, channels] + [1] * (input.dim() - 2)
        output = (input - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            output = output * self.weight.view(shape) + self.bias.view(shape)
        return output
