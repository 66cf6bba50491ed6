"""The torch this process imports against the torch dtrain's extension was built for.

The extension links LibTorch's C++ API, which changes between torch releases: loaded into
another release it fails with an undefined symbol or, worse, runs on a changed class layout.
So before it loads, the release is checked, and a mismatch is one line naming both versions.
"""
import torch


def _release(version: str) -> tuple:
    """(major, minor) of a torch version such as ``2.14.1+cu130``."""
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def check_torch(imported: str = torch.__version__) -> None:
    """Raises ImportError unless ``imported`` is the torch release this build is for, inside
    dtrain's supported range."""
    try:
        from dtrain import _build_info
    except ImportError:
        raise ImportError("dtrain: this copy of the package was never built (no dtrain/_build_info.py): "
                          "install it with `pip install .`, or build it with scripts/build and use build/python") from None
    oldest, newest = (_release(v + ".0") for v in _build_info.SUPPORTED_TORCH)
    if not oldest <= _release(imported) <= newest:
        raise ImportError(f"dtrain supports torch {_build_info.SUPPORTED_TORCH[0]} to {_build_info.SUPPORTED_TORCH[1]}, "
                          f"but this Python imports torch {imported}: install a torch in that range")
    if _release(imported) != _release(_build_info.TORCH_VERSION):
        raise ImportError(f"dtrain was built against torch {_build_info.TORCH_VERSION}, but this Python imports torch "
                          f"{imported}: rebuild dtrain in this environment (pip install . --no-build-isolation)")
