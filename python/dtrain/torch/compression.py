"""Gradient compression for the wire: Horovod's ``Compression.none`` and ``Compression.fp16``,
and ``Compression.bf16``."""
from typing import Any, Tuple

import torch


class Compressor:
    """Turns a tensor into what travels and back."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        """Returns the tensor to send and what decompress() needs to restore it."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16 and restores their dtype on arrival."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        dtype = tensor.dtype
        if tensor.dtype.is_floating_point and tensor.dtype != torch.float16:
            tensor = tensor.to(torch.float16)
        return tensor, dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor.to(ctx) if ctx is not None and ctx.is_floating_point and tensor.dtype != ctx else tensor


class BF16Compressor(Compressor):
    """Sends float32 and float64 tensors as bfloat16 (float32's range, 8 significant bits) and
    restores their dtype on arrival; float16 and bfloat16 tensors travel as they are."""

    @staticmethod
    def compress(tensor: torch.Tensor) -> Tuple[torch.Tensor, Any]:
        dtype = tensor.dtype
        if dtype in (torch.float32, torch.float64):
            tensor = tensor.to(torch.bfloat16)
        return tensor, dtype

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        return tensor.to(ctx) if ctx is not None and tensor.dtype != ctx else tensor


class Compression:
    """The compressors DistributedOptimizer and allreduce take (``compression=``)."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
