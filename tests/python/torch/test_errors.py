"""Errors as users of ``horovod.torch`` meet them, in ``dtrain.torch``.

Ranks that disagree about a collective (shape, dtype, root, op, scale factors) get an
error on every rank, of the same class, naming the operation's name, and the job goes on:
each test ends with a collective that must still work. Horovod raises these from
``synchronize()`` as ``HorovodInternalError``, a ``RuntimeError`` (horovod/torch/mpi_ops.py);
arguments a rank can reject alone are ``ValueError``s before anything is sent.
"""
import json
import os
import subprocess
import sys

import pytest
import torch

import dtrain.torch as hvd
from multirank import assert_tensor, every_rank, gather_objects, outcome_of, rank_tensor


@pytest.fixture
def two_ranks():
    """Disagreements need someone to disagree with (skipped alike on every rank)."""
    if hvd.size() < 2:
        pytest.skip("needs at least two ranks")


def summary_of(status, value):
    if status == "raised":
        return ("raised", type(value).__name__)
    return ("ok", None)


def attempt_everywhere(call, name):
    """Runs `call` on every rank, then gathers what happened everywhere and runs one more
    allreduce (the job must go on). Returns this rank's (status, value), every rank's summary
    and the later allreduce's outcome."""
    status, value = outcome_of(call)
    summaries = gather_objects(summary_of(status, value), name=f"{name}.outcome")
    inputs = every_rank(lambda r: rank_tensor(r, (3,), torch.float64, seed=77))
    later = outcome_of(lambda: hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, name=f"{name}.after"))
    return status, value, summaries, (later, torch.stack(inputs).sum(0))


def assert_refused_everywhere(status, value, summaries, later, tensor_name):
    """Every rank raised a RuntimeError of one class naming `tensor_name`; a later allreduce worked."""
    assert status == "raised", f"no error; returned {value!r}"
    assert isinstance(value, RuntimeError), f"{type(value).__name__}: {value}"
    assert len(set(summaries)) == 1, f"ranks disagree: {summaries}"
    assert tensor_name in str(value), f"the message does not name {tensor_name!r}: {value}"
    (later_status, later_value), expected = later
    assert later_status == "ok", f"the next collective failed: {later_value!r}"
    assert_tensor(later_value, expected)


@pytest.mark.usefixtures("two_ranks")
def test_allreduce_of_different_shapes():
    tensor = torch.ones(3 + hvd.rank(), 2)
    outcome = attempt_everywhere(lambda: hvd.allreduce(tensor, name="mismatch.shape"), "mismatch.shape")
    assert_refused_everywhere(*outcome, "mismatch.shape")


@pytest.mark.usefixtures("two_ranks")
def test_allreduce_of_same_count_different_rank():
    """Same number of elements, different number of dimensions."""
    tensor = torch.ones(4, 6) if hvd.rank() == 0 else torch.ones(4, 2, 3)
    outcome = attempt_everywhere(lambda: hvd.allreduce(tensor, name="mismatch.ndim"), "mismatch.ndim")
    assert_refused_everywhere(*outcome, "mismatch.ndim")


@pytest.mark.usefixtures("two_ranks")
def test_allreduce_of_different_dtypes():
    tensor = torch.ones(5, dtype=torch.int32 if hvd.rank() % 2 == 0 else torch.float32)
    outcome = attempt_everywhere(lambda: hvd.allreduce(tensor, op=hvd.Sum, name="mismatch.dtype"), "mismatch.dtype")
    assert_refused_everywhere(*outcome, "mismatch.dtype")


@pytest.mark.usefixtures("two_ranks")
def test_allreduce_of_different_ops():
    op = hvd.Sum if hvd.rank() == 0 else hvd.Average
    outcome = attempt_everywhere(lambda: hvd.allreduce(torch.ones(4), op=op, name="mismatch.op"), "mismatch.op")
    assert_refused_everywhere(*outcome, "mismatch.op")


@pytest.mark.usefixtures("two_ranks")
def test_allreduce_of_different_scale_factors():
    """Horovod refuses mismatched prescale/postscale factors rather than mixing them."""
    factor = 1.0 + hvd.rank()
    outcome = attempt_everywhere(
        lambda: hvd.allreduce(torch.ones(4), op=hvd.Sum, prescale_factor=factor, name="mismatch.prescale"),
        "mismatch.prescale")
    assert_refused_everywhere(*outcome, "mismatch.prescale")


@pytest.mark.usefixtures("two_ranks")
def test_async_allreduce_of_different_shapes_fails_in_synchronize():
    tensor = torch.ones(2, 2 + hvd.rank())
    outcome = attempt_everywhere(lambda: hvd.synchronize(hvd.allreduce_async(tensor, name="mismatch.async")),
                                 "mismatch.async")
    assert_refused_everywhere(*outcome, "mismatch.async")


@pytest.mark.usefixtures("two_ranks")
def test_grouped_allreduce_of_different_shapes():
    tensors = [torch.ones(3), torch.ones(2, 1 + hvd.rank())]
    outcome = attempt_everywhere(lambda: hvd.grouped_allreduce(tensors, name="mismatch.grouped"), "mismatch.grouped")
    assert_refused_everywhere(*outcome, "mismatch.grouped")


@pytest.mark.usefixtures("two_ranks")
def test_allgather_of_different_trailing_dimensions():
    tensor = torch.ones(2, 3 + hvd.rank())
    outcome = attempt_everywhere(lambda: hvd.allgather(tensor, name="mismatch.allgather"), "mismatch.allgather")
    assert_refused_everywhere(*outcome, "mismatch.allgather")


@pytest.mark.usefixtures("two_ranks")
def test_allgather_of_different_dtypes():
    tensor = torch.ones(2, 3, dtype=torch.float64 if hvd.rank() == 0 else torch.float32)
    outcome = attempt_everywhere(lambda: hvd.allgather(tensor, name="mismatch.allgather.dtype"),
                                 "mismatch.allgather.dtype")
    assert_refused_everywhere(*outcome, "mismatch.allgather.dtype")


@pytest.mark.usefixtures("two_ranks")
def test_broadcast_of_different_shapes():
    tensor = torch.ones(4 + hvd.rank())
    outcome = attempt_everywhere(lambda: hvd.broadcast(tensor, root_rank=0, name="mismatch.broadcast"),
                                 "mismatch.broadcast")
    assert_refused_everywhere(*outcome, "mismatch.broadcast")


@pytest.mark.usefixtures("two_ranks")
def test_broadcast_with_different_roots():
    tensor = torch.ones(4)
    outcome = attempt_everywhere(lambda: hvd.broadcast(tensor, root_rank=hvd.rank(), name="mismatch.root"),
                                 "mismatch.root")
    assert_refused_everywhere(*outcome, "mismatch.root")


@pytest.mark.usefixtures("two_ranks")
def test_collective_failure_is_horovod_internal_error():
    """Horovod wraps a failed collective in hvd.HorovodInternalError (a RuntimeError), the
    exception elastic training recovers from."""
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    status, value, summaries, later = attempt_everywhere(
        lambda: hvd.allreduce(torch.ones(1 + hvd.rank()), name="mismatch.internal"), "mismatch.internal")
    assert_refused_everywhere(status, value, summaries, later, "mismatch.internal")
    assert isinstance(value, hvd.HorovodInternalError), type(value)


# ---------------------------------------------------------------- refused before sending


def test_adasum_is_refused():
    """dtrain has no Adasum: asking for it is an error saying so, on every rank, and the
    job goes on."""
    tensor = torch.ones(4)
    status, value, summaries, later = attempt_everywhere(
        lambda: hvd.allreduce(tensor, op=hvd.Adasum, name="adasum.allreduce"), "adasum.allreduce")
    grouped = outcome_of(lambda: hvd.grouped_allreduce([torch.ones(2), torch.ones(3)], op=hvd.Adasum,
                                                       name="adasum.grouped"))
    grouped_summaries = gather_objects(summary_of(*grouped), name="adasum.grouped.outcome")
    assert status == "raised", f"Adasum allreduce returned {value!r}"
    assert "Adasum" in str(value), str(value)
    assert len(set(summaries)) == 1, summaries
    assert grouped[0] == "raised" and "Adasum" in str(grouped[1]), grouped
    assert len(set(grouped_summaries)) == 1, grouped_summaries
    (later_status, later_value), expected = later
    assert later_status == "ok", repr(later_value)
    assert_tensor(later_value, expected)


def test_adasum_distributed_optimizer_is_refused():
    """DistributedOptimizer(op=hvd.Adasum) fails with a message naming Adasum, at
    construction or at the first step, on every rank."""
    model = torch.nn.Linear(3, 1)

    def train_one_step():
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                             named_parameters=model.named_parameters(), op=hvd.Adasum)
        model(torch.ones(2, 3)).sum().backward()
        optimizer.step()

    status, value = outcome_of(train_one_step)
    summaries = gather_objects(summary_of(status, value), name="adasum.optimizer.outcome")
    assert status == "raised" and "Adasum" in str(value), repr(value)
    assert len(set(summaries)) == 1, summaries


def test_reducescatter_refuses_adasum():
    """Horovod's reducescatter supports Average and Sum only."""
    status, value = outcome_of(lambda: hvd.reducescatter(torch.ones(2 * hvd.size()), op=hvd.Adasum,
                                                         name="adasum.reducescatter"))
    summaries = gather_objects(summary_of(status, value), name="adasum.reducescatter.outcome")
    assert status == "raised", repr(value)
    assert len(set(summaries)) == 1, summaries


def test_reducescatter_refuses_a_scalar():
    """Horovod: 'Reducescatter does not support scalar inputs'."""
    status, value = outcome_of(lambda: hvd.reducescatter(torch.tensor(1.0), name="reducescatter.scalar"))
    summaries = gather_objects(summary_of(status, value), name="reducescatter.scalar.outcome")
    assert status == "raised" and isinstance(value, (ValueError, RuntimeError)), repr(value)
    assert len(set(summaries)) == 1, summaries


@pytest.mark.usefixtures("two_ranks")
def test_alltoall_refuses_bad_splits():
    """Horovod checks these on each rank before sending, as ValueError: a first dimension
    that size() does not divide (no splits), splits summing past the first dimension, and
    a splits list whose length is not size()."""
    uneven = outcome_of(lambda: hvd.alltoall(torch.ones(hvd.size() + 1), name="alltoall.uneven"))
    too_many = outcome_of(lambda: hvd.alltoall(torch.ones(hvd.size() - 1), splits=[1] * hvd.size(),
                                               name="alltoall.too_many"))
    wrong_length = outcome_of(lambda: hvd.alltoall(torch.ones(hvd.size() + 1), splits=[1] * (hvd.size() + 1),
                                                   name="alltoall.wrong_length"))
    inputs = every_rank(lambda r: rank_tensor(r, (hvd.size(), 2), torch.float64, seed=88))
    later = hvd.alltoall(inputs[hvd.rank()], name="alltoall.after")
    for status, value in (uneven, too_many, wrong_length):
        assert status == "raised" and isinstance(value, ValueError), repr(value)
    assert_tensor(later, torch.stack([inputs[j][hvd.rank()] for j in range(hvd.size())]))


# Rank 0 submits one operation more than the others here; in Horovod that shifts the
# numbering of later unnamed operations, so this stays the last test that communicates.
@pytest.mark.usefixtures("two_ranks")
def test_duplicate_name_in_flight_is_refused():
    """A second operation under the name of one still in flight is a ValueError (Horovod).
    Rank 0 submits first and retries the name before the others can have submitted it (they
    do so after a barrier that rank 0 reaches afterwards); the first operation completes."""
    inputs = every_rank(lambda r: rank_tensor(r, (4,), torch.float64, seed=99))
    duplicate = None
    if hvd.rank() == 0:
        handle = hvd.allreduce_async(inputs[0], op=hvd.Sum, name="duplicate")
        duplicate = outcome_of(lambda: hvd.allreduce_async(inputs[0], op=hvd.Sum, name="duplicate"))
        hvd.barrier()
    else:
        hvd.barrier()
        handle = hvd.allreduce_async(inputs[hvd.rank()], op=hvd.Sum, name="duplicate")
    result = hvd.synchronize(handle)
    if hvd.rank() == 0:
        status, value = duplicate
        assert status == "raised" and isinstance(value, ValueError), repr(value)
    assert_tensor(result, torch.stack(inputs).sum(0))


# ---------------------------------------------------------------- before init

NOT_INITIALIZED_SCRIPT = r"""
import json
import torch
import dtrain.torch as hvd

report = {}

def attempt(key, call):
    try:
        report[key] = {"raised": None, "value": repr(call())}
    except Exception as e:
        report[key] = {"raised": type(e).__name__, "value_error": isinstance(e, ValueError),
                       "runtime_error": isinstance(e, RuntimeError), "message": str(e)}

attempt("is_initialized", hvd.is_initialized)
attempt("size", hvd.size)
attempt("rank", hvd.rank)
attempt("allreduce", lambda: hvd.allreduce(torch.ones(2), name="before.init"))
hvd.init()
report["alone"] = {"size": hvd.size(), "rank": hvd.rank(), "initialized": hvd.is_initialized(),
                   "sum": hvd.allreduce(torch.tensor([1.0, 2.0]), op=hvd.Sum, name="alone").tolist()}
hvd.shutdown()
print("REPORT " + json.dumps(report))
"""

LAUNCHER_PREFIXES = ("DTRAIN_", "HOROVOD_", "OMPI_", "PMI_", "PMIX_", "SLURM_")


def test_calls_before_init_and_a_process_alone():
    """Without hvd.init(), hvd.size() and hvd.rank() raise a one-line ValueError telling the
    user to call init() (Horovod: 'Horovod has not been initialized; use hvd.init().'), an
    allreduce raises too (Horovod: the same message as HorovodInternalError), and
    is_initialized() is False. A process started without a launcher then inits as a world
    of one. Run in a fresh interpreter without the launcher's environment."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    done = subprocess.run([sys.executable, "-c", NOT_INITIALIZED_SCRIPT], env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert len(lines) == 1, done.stdout + done.stderr
    report = json.loads(lines[0][len("REPORT "):])

    assert report["is_initialized"] == {"raised": None, "value": "False"}
    for key in ("size", "rank"):
        attempt = report[key]
        assert attempt["raised"] is not None and attempt["value_error"], attempt
        assert "init(" in attempt["message"] and "\n" not in attempt["message"].strip(), attempt
    attempt = report["allreduce"]
    assert attempt["raised"] is not None, attempt
    assert attempt["value_error"] or attempt["runtime_error"], attempt
    assert "init(" in attempt["message"] and "\n" not in attempt["message"].strip(), attempt
    assert report["alone"] == {"size": 1, "rank": 0, "initialized": True, "sum": [1.0, 2.0]}
