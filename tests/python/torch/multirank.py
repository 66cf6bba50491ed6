"""Helpers for tests that run as every rank of one job.

Each test holds a collective against the same computation done in one process: every rank
can rebuild every rank's input (``rank_tensor(r, ...)`` depends on ``r`` and a seed only),
so it knows what the collective must return without asking the others.

Assertions come after a test's collectives wherever possible: a rank that stopped half way
through a test would leave the others waiting for operations it never submits.
"""
import torch

import dtrain.torch as hvd

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# Absolute and relative tolerances against a float64 reference computed from the same
# integer-valued inputs: the rounding of one or two operations in the tensor's dtype.
_TOLERANCES = {
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
    torch.float32: dict(rtol=1e-6, atol=1e-6),
    torch.float64: dict(rtol=1e-12, atol=1e-12),
}


def generator(seed):
    """A private random generator, so that tests do not depend on each other's draws."""
    g = torch.Generator()
    g.manual_seed(seed)
    return g


def rank_tensor(r, shape, dtype, seed=1234, low=-20, high=21):
    """Rank ``r``'s input: integers in [low, high) as ``dtype``, the same on every rank.

    Integer values keep sums, minima, maxima and small products exact in every dtype, so
    only the division of an average and the scale factors round.
    """
    values = torch.randint(low, high, tuple(shape), generator=generator(seed + r), dtype=torch.int64)
    return values.to(dtype)


def rank_floats(r, shape, seed=1234, dtype=torch.float64):
    """Rank ``r``'s real-valued input (normal draws), the same on every rank."""
    return torch.randn(tuple(shape), generator=generator(seed + r), dtype=torch.float64).to(dtype)


def every_rank(make):
    """``[make(0), ..., make(size - 1)]``: what each rank holds."""
    return [make(r) for r in range(hvd.size())]


def tolerance(dtype):
    return _TOLERANCES.get(dtype, dict(rtol=0, atol=0))


def assert_tensor(actual, expected, dtype=None):
    """``actual`` has ``expected``'s shape and ``dtype`` and its values within the dtype's rounding.

    ``expected`` may be float64 (the exact value) for a floating-point ``actual``; integer
    results must be equal.
    """
    dtype = dtype if dtype is not None else expected.dtype
    assert isinstance(actual, torch.Tensor), f"expected a tensor, got {type(actual).__name__}"
    assert actual.dtype == dtype, f"dtype {actual.dtype}, expected {dtype}"
    assert tuple(actual.shape) == tuple(expected.shape), f"shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    if dtype.is_floating_point:
        torch.testing.assert_close(actual.detach().double(), expected.detach().double(), **tolerance(dtype))
    else:
        assert torch.equal(actual, expected.to(dtype)), f"{actual} != {expected}"


def gather_objects(value, name):
    """Every rank's ``value`` (a collective: call it on every rank, in the same place)."""
    return hvd.allgather_object(value, name=name)


def outcome_of(call):
    """``("ok", result)`` or ``("raised", exception)``: lets a test gather what happened on
    every rank before it asserts anything."""
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 - the test inspects whatever was raised
        return "raised", e


def assert_state_equal(actual, expected, where="state"):
    """Nested dicts, lists and tuples of tensors and plain values are equal (tensors exactly)."""
    if torch.is_tensor(expected):
        assert torch.is_tensor(actual), f"{where}: {type(actual).__name__} instead of a tensor"
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, f"{where}: {actual} != {expected}"
        assert torch.equal(actual, expected), f"{where}: {actual} != {expected}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: {type(actual).__name__} instead of a dict"
        assert sorted(actual, key=repr) == sorted(expected, key=repr), f"{where}: keys {list(actual)} != {list(expected)}"
        for key in expected:
            assert_state_equal(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert type(actual) is type(expected), f"{where}: {type(actual).__name__} != {type(expected).__name__}"
        assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_state_equal(a, e, f"{where}[{i}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


class shared_directory:
    """A directory every rank of this host sees: made by rank 0, its path broadcast, removed
    by rank 0 once every rank has left the ``with`` block (a collective on entry and exit)."""

    def __init__(self, name):
        self._name = name
        self.path = None

    def __enter__(self):
        import tempfile

        made = tempfile.mkdtemp(prefix="dtrain-python-test-") if hvd.rank() == 0 else None
        self.path = hvd.broadcast_object(made, root_rank=0, name=f"{self._name}.directory")
        return self.path

    def __exit__(self, *exc_info):
        import shutil

        hvd.barrier()
        if hvd.rank() == 0:
            shutil.rmtree(self.path, ignore_errors=True)
        return False
