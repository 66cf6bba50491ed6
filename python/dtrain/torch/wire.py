"""How a tensor travels through the runtime, which moves uint8, int32, int64, float16, bfloat16,
float32 and float64 only. bool and int8 tensors travel as their bytes (uint8) where nothing is
reduced; int8 reductions and int16 tensors travel as int32 and are cast back on arrival.
Integer tensors take their scale factors here (each element times the factor, converted back,
as Horovod scales integers): the runtime scales floating-point tensors only."""
from typing import Tuple

import torch

_MOVED_AS_BYTES = (torch.bool, torch.int8)
_WIDENED = (torch.int8, torch.int16)
SUPPORTED = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
             torch.float32, torch.float64, torch.bool)


def _scaled(tensor: torch.Tensor, factor: float) -> torch.Tensor:
    if factor == 1.0:
        return tensor
    return (tensor.to(torch.float64) * factor).to(tensor.dtype)


class Wire:
    """One tensor of an operation: what is sent, with which scale factors, and how the result
    is turned back into the caller's dtype (and, in place, into the caller's tensor)."""

    def __init__(self, tensor: torch.Tensor, reduce: bool, prescale_factor: float = 1.0,
                 postscale_factor: float = 1.0) -> None:
        self.tensor = tensor
        self.dtype = tensor.dtype
        integer = not (tensor.dtype.is_floating_point or tensor.dtype.is_complex)
        self.local_scales = integer and reduce and (prescale_factor != 1.0 or postscale_factor != 1.0)
        self.postscale_factor = postscale_factor if self.local_scales else 1.0
        self.factors: Tuple[float, float] = (1.0, 1.0) if self.local_scales else (prescale_factor, postscale_factor)
        sent = _scaled(tensor, prescale_factor) if self.local_scales else tensor
        if tensor.dtype in _WIDENED and (reduce or tensor.dtype == torch.int16):
            sent = sent.to(torch.int32)
        elif tensor.dtype in _MOVED_AS_BYTES:
            sent = sent.view(torch.uint8) if sent.dim() > 0 else sent.reshape(1).view(torch.uint8).reshape(())
        self.sent = sent

    @property
    def copied(self) -> bool:
        """Whether what travels is not the caller's tensor itself (in place then copies back)."""
        return self.sent.data_ptr() != self.tensor.data_ptr() or self.sent.dtype != self.tensor.dtype

    def result(self, received: torch.Tensor) -> torch.Tensor:
        """The received tensor in the caller's dtype, post-scaled where this side scales."""
        if received.dtype != self.dtype:
            if received.dtype == torch.uint8 and self.dtype in _MOVED_AS_BYTES:
                received = received.view(self.dtype)
            else:
                received = received.to(self.dtype)
        return _scaled(received, self.postscale_factor)

    def into_place(self, received: torch.Tensor) -> torch.Tensor:
        """For in-place operations: the result written into the caller's tensor."""
        result = self.result(received)
        if result.data_ptr() != self.tensor.data_ptr() or self.copied:
            with torch.no_grad():
                self.tensor.copy_(result)
        return self.tensor


def check(tensor: torch.Tensor, what: str, reduce: bool) -> None:
    """Refuses, in one line, what cannot travel: not a tensor, sparse, an unsupported dtype, a
    bool tensor to be reduced."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"dtrain: {what} takes a torch.Tensor, got {type(tensor).__name__}")
    if tensor.is_sparse:
        raise ValueError(f"dtrain: {what} takes dense tensors; convert sparse ones with .to_dense()")
    if tensor.dtype not in SUPPORTED:
        raise TypeError(f"dtrain: {what}: tensors of dtype {tensor.dtype} are not supported (uint8, int8, int16, "
                        "int32, int64, float16, bfloat16, float32, float64, and bool where nothing is reduced)")
    if reduce and tensor.dtype == torch.bool:
        raise TypeError(f"dtrain: {what} cannot reduce bool tensors; convert them to torch.uint8 first")
