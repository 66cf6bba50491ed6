"""``dtrain.torch`` collectives against Horovod's documented ``horovod.torch`` semantics.

Run as every rank of one job (``dtrain run -np N -- python3 -m pytest FILE``). Each test
rebuilds every rank's input locally (see ``multirank``) and holds the collective's result
against the same computation done in one process.

Where Horovod's behaviour was read from its source (horovod/torch/mpi_ops.py,
horovod/torch/functions.py, horovod/common/basics.py, horovod/common/ops/*), the test says so.
"""
import os
import time

import pytest
import torch

import dtrain.torch as hvd
from multirank import (
    assert_tensor,
    every_rank,
    gather_objects,
    outcome_of,
    rank_floats,
    rank_tensor,
    shared_directory,
)

OPS = ["Average", "Sum", "Min", "Max", "Product"]

# The dtypes horovod.torch's allreduce (and grouped allreduce, reducescatter) accepts on
# CPU: mpi_ops_v2.cc registers Int, Long, Half, Float and Double tensors only.
REDUCE_DTYPES = [torch.int32, torch.int64, torch.float16, torch.float32, torch.float64]
# Horovod refuses these for reductions (ValueError "Tensor type ... is not supported.").
REDUCE_DTYPES_HOROVOD_REFUSES = [torch.uint8, torch.bfloat16]
# allgather, broadcast and alltoall move data only; Horovod accepts Byte, Char and Short
# tensors there too.
MOVE_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
               torch.float16, torch.float32, torch.float64]


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def op_input(r, shape, dtype, op_name, seed=1234):
    """Rank r's input for `op_name`: small factors for Product, non-negative for uint8."""
    low, high = (-3, 4) if op_name == "Product" else (-20, 21)
    if dtype == torch.uint8:
        low = 0
    return rank_tensor(r, shape, dtype, seed=seed, low=low, high=high)


def reduce_locally(inputs, op_name):
    """What Horovod's allreduce of `inputs` (one per rank) returns, computed in one process.

    Floating-point results are exact float64 values (the test compares within the dtype's
    rounding). Integer Average: Horovod sums, then scales the integer sum by 1/size in double
    precision and converts back (ScaleBufferCPUImpl in horovod/common/ops/collective_operations.h),
    which truncates toward zero; Horovod's own join test divides integers with
    rounding_mode='trunc' too. The inputs include negative values, so truncation and floor
    division are told apart.
    """
    dtype = inputs[0].dtype
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    stacked = torch.stack([t.to(wide) for t in inputs])
    if op_name == "Sum":
        return stacked.sum(0)
    if op_name == "Average":
        if dtype.is_floating_point:
            return stacked.sum(0) / len(inputs)
        return torch.div(stacked.sum(0), len(inputs), rounding_mode="trunc")
    if op_name == "Min":
        return stacked.min(0).values
    if op_name == "Max":
        return stacked.max(0).values
    if op_name == "Product":
        return stacked.prod(0)
    raise AssertionError(op_name)


def assert_same_outcome_everywhere(status, value, name):
    """Gathers (status, exception class) from every rank and checks they agree."""
    summary = (status, type(value).__name__ if status == "raised" else None)
    summaries = gather_objects(summary, name=name)
    assert len(set(summaries)) == 1, f"ranks disagree: {summaries}"


# ---------------------------------------------------------------- process queries


def test_rank_and_size_are_the_launchers():
    """hvd.rank() and hvd.size() are what the launcher gave this process (dtrain run, or
    mpirun for dtrain run --mpi)."""
    prefix = "DTRAIN_" if "DTRAIN_SIZE" in os.environ else "OMPI_COMM_WORLD_"
    assert hvd.size() == int(os.environ[prefix + "SIZE"])
    assert hvd.rank() == int(os.environ[prefix + "RANK"])


def test_placement_is_consistent_across_ranks():
    """Ranks are 0..size-1 once each; local ranks number each host's ranks from 0; one host
    means local == global and a single cross rank."""
    mine = dict(rank=hvd.rank(), size=hvd.size(), local_rank=hvd.local_rank(), local_size=hvd.local_size(),
                cross_rank=hvd.cross_rank(), cross_size=hvd.cross_size(), homogeneous=hvd.is_homogeneous())
    everyone = gather_objects(mine, name="placement")
    assert [p["rank"] for p in everyone] == list(range(hvd.size()))
    assert all(p["size"] == hvd.size() for p in everyone)
    for p in everyone:
        assert all(isinstance(v, int) for k, v in p.items() if k != "homogeneous"), p
        assert isinstance(p["homogeneous"], bool), p
    hosts = {}
    for p in everyone:
        hosts.setdefault(p["cross_rank"], []).append(p)
    for host_ranks in hosts.values():
        assert sorted(p["local_rank"] for p in host_ranks) == list(range(len(host_ranks)))
        assert all(p["local_size"] == len(host_ranks) for p in host_ranks)
        assert all(p["cross_size"] == len(hosts) for p in host_ranks)
    if os.environ.get("DTRAIN_CROSS_SIZE") == "1":
        assert mine["local_rank"] == mine["rank"] and mine["local_size"] == mine["size"]
        assert mine["cross_rank"] == 0 and mine["cross_size"] == 1
        assert mine["homogeneous"] is True


def test_is_initialized():
    assert hvd.is_initialized() is True


def test_build_and_runtime_flags():
    """The *_built and *_enabled queries answer bools (nccl_built: Horovod returns the NCCL
    version code or 0, an int); a transport enabled at runtime was built in."""
    for query in (hvd.mpi_built, hvd.gloo_built, hvd.ddl_built, hvd.ccl_built, hvd.cuda_built,
                  hvd.rocm_built, hvd.mpi_enabled, hvd.gloo_enabled):
        assert isinstance(query(), bool), f"{query.__name__}() returned {query()!r}"
    assert isinstance(hvd.nccl_built(), int)
    if hvd.mpi_enabled():
        assert hvd.mpi_built()
    if hvd.gloo_enabled():
        assert hvd.gloo_built()


def test_reduce_op_constants_are_distinct():
    ops = [hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product]
    assert len(set(ops)) == len(ops)


# ---------------------------------------------------------------- allreduce


@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
def test_allreduce(dtype, op_name):
    """hvd.allreduce(tensor, op=...) returns every rank's tensors reduced, with the input's
    dtype and shape, and leaves the input unchanged."""
    inputs = every_rank(lambda r: op_input(r, (4, 5), dtype, op_name))
    tensor = inputs[hvd.rank()].clone()
    result = hvd.allreduce(tensor, op=getattr(hvd, op_name))
    assert_tensor(result, reduce_locally(inputs, op_name), dtype)
    assert torch.equal(tensor, inputs[hvd.rank()]), "the input was modified"


@pytest.mark.parametrize("op_name", OPS)
@pytest.mark.parametrize("dtype", REDUCE_DTYPES_HOROVOD_REFUSES, ids=dtype_id)
def test_allreduce_of_a_dtype_horovod_refuses(dtype, op_name):
    """Horovod refuses uint8 and bfloat16 allreduces with ValueError before communicating.
    dtrain may accept them instead; then the result must be right. Every rank does the same."""
    inputs = every_rank(lambda r: op_input(r, (3, 4), dtype, op_name))
    status, value = outcome_of(lambda: hvd.allreduce(inputs[hvd.rank()].clone(), op=getattr(hvd, op_name),
                                                     name=f"refused.{dtype_id(dtype)}.{op_name}"))
    assert_same_outcome_everywhere(status, value, f"refused.outcome.{dtype_id(dtype)}.{op_name}")
    if status == "raised":
        assert isinstance(value, ValueError), repr(value)
    else:
        assert_tensor(value, reduce_locally(inputs, op_name), dtype)


def test_allreduce_default_op_is_average():
    inputs = every_rank(lambda r: rank_tensor(r, (6,), torch.float64))
    result = hvd.allreduce(inputs[hvd.rank()], name="default.op")
    assert_tensor(result, reduce_locally(inputs, "Average"))


def test_allreduce_legacy_average_argument():
    """The deprecated `average=` still works: True means Average, False means Sum."""
    inputs = every_rank(lambda r: rank_tensor(r, (2, 3), torch.float32))
    averaged = hvd.allreduce(inputs[hvd.rank()], average=True, name="legacy.average")
    summed = hvd.allreduce(inputs[hvd.rank()], average=False, name="legacy.sum")
    summed_in_place = inputs[hvd.rank()].clone()
    hvd.allreduce_(summed_in_place, average=False, name="legacy.sum_")
    assert_tensor(averaged, reduce_locally(inputs, "Average"), torch.float32)
    assert_tensor(summed, reduce_locally(inputs, "Sum"), torch.float32)
    assert_tensor(summed_in_place, reduce_locally(inputs, "Sum"), torch.float32)


def test_allreduce_refuses_op_together_with_average():
    """Horovod: 'The op parameter supersedes average': passing both is a ValueError."""
    with pytest.raises(ValueError):
        hvd.allreduce(torch.ones(3), average=True, op=hvd.Sum, name="both.op.and.average")


def test_allreduce_of_a_scalar_metric():
    """The metric-averaging idiom: a 0-dim tensor comes back 0-dim, averaged."""
    value = torch.tensor(float(hvd.rank() + 1), dtype=torch.float64)
    result = hvd.allreduce(value, name="metric.loss")
    assert result.shape == torch.Size([])
    assert result.item() == pytest.approx(sum(range(1, hvd.size() + 1)) / hvd.size(), rel=1e-12)


def test_allreduce_in_place():
    """hvd.allreduce_ reduces into its argument and returns it."""
    inputs = every_rank(lambda r: rank_tensor(r, (5, 2), torch.float64))
    tensor = inputs[hvd.rank()].clone()
    returned = hvd.allreduce_(tensor, op=hvd.Sum, name="inplace.sum")
    assert_tensor(tensor, reduce_locally(inputs, "Sum"))
    assert_tensor(returned, reduce_locally(inputs, "Sum"))
    assert returned.data_ptr() == tensor.data_ptr()


def test_allreduce_async_and_synchronize():
    """allreduce_async returns a handle; synchronize(handle) returns a new tensor with the
    result and the input is unchanged."""
    inputs = every_rank(lambda r: rank_tensor(r, (3, 3), torch.float32))
    tensor = inputs[hvd.rank()].clone()
    handle = hvd.allreduce_async(tensor, name="async.max", op=hvd.Max)
    result = hvd.synchronize(handle)
    assert_tensor(result, reduce_locally(inputs, "Max"), torch.float32)
    assert torch.equal(tensor, inputs[hvd.rank()])


def test_allreduce_async_in_place():
    inputs = every_rank(lambda r: rank_tensor(r, (7,), torch.int64))
    tensor = inputs[hvd.rank()].clone()
    handle = hvd.allreduce_async_(tensor, name="async.inplace.min", op=hvd.Min)
    returned = hvd.synchronize(handle)
    assert_tensor(tensor, reduce_locally(inputs, "Min"), torch.int64)
    assert returned.data_ptr() == tensor.data_ptr()


def test_many_allreduces_in_flight_synchronized_in_reverse():
    """Several handles at once (fusable), waited for in the opposite order."""
    shapes = [(3,), (4, 2), (1,), (2, 2, 2), (9,), (5, 1)]
    inputs = [every_rank(lambda r, k=k, s=s: rank_tensor(r, s, torch.float64, seed=50 + k)) for k, s in enumerate(shapes)]
    handles = [hvd.allreduce_async(per_rank[hvd.rank()], name=f"inflight.{k}", op=hvd.Sum)
               for k, per_rank in enumerate(inputs)]
    results = {k: hvd.synchronize(handles[k]) for k in reversed(range(len(handles)))}
    for k, per_rank in enumerate(inputs):
        assert_tensor(results[k], reduce_locally(per_rank, "Sum"))


def test_poll_is_false_until_every_rank_submitted():
    """poll() is a bool; rank 0 submits first and polls before the others can have submitted
    (they submit after a barrier rank 0 reaches only after polling), so it must say False.
    Once poll says True, synchronize returns the result."""
    inputs = every_rank(lambda r: rank_tensor(r, (4,), torch.float64))
    tensor = inputs[hvd.rank()]
    early = None
    if hvd.rank() == 0:
        handle = hvd.allreduce_async(tensor, name="poll.late", op=hvd.Sum)
        early = hvd.poll(handle)
        hvd.barrier()
    else:
        hvd.barrier()
        handle = hvd.allreduce_async(tensor, name="poll.late", op=hvd.Sum)
    while not hvd.poll(handle):
        time.sleep(0.001)
    finished = hvd.poll(handle)
    result = hvd.synchronize(handle)
    if hvd.rank() == 0:
        assert early is False
    assert finished is True
    assert_tensor(result, reduce_locally(inputs, "Sum"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64], ids=dtype_id)
def test_allreduce_prescale_and_postscale(dtype):
    """prescale_factor multiplies every contribution, postscale_factor the result (after the
    division of Average)."""
    inputs = every_rank(lambda r: rank_tensor(r, (3, 5), dtype))
    summed = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0,
                           name=f"scale.sum.{dtype_id(dtype)}")
    averaged = hvd.allreduce(inputs[hvd.rank()], op=hvd.Average, prescale_factor=2.0, postscale_factor=0.25,
                             name=f"scale.average.{dtype_id(dtype)}")
    in_place = inputs[hvd.rank()].clone()
    hvd.synchronize(hvd.allreduce_async_(in_place, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0,
                                         name=f"scale.sum_.{dtype_id(dtype)}"))
    assert_tensor(summed, 1.5 * reduce_locally(inputs, "Sum"), dtype)
    assert_tensor(averaged, 0.5 * reduce_locally(inputs, "Average"), dtype)
    assert_tensor(in_place, 1.5 * reduce_locally(inputs, "Sum"), dtype)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=dtype_id)
def test_allreduce_scales_integer_tensors_too(dtype):
    """Horovod applies the scale factors to integer tensors as well (ScaleBuffer covers
    INT32 and INT64: each element becomes factor * value converted back). Factors 2 and 3
    on integers are exact, so the Sum is 6 times the plain sum."""
    inputs = every_rank(lambda r: rank_tensor(r, (4,), dtype))
    result = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, prescale_factor=2.0, postscale_factor=3.0,
                           name=f"scale.integer.{dtype_id(dtype)}")
    assert_tensor(result, 6 * reduce_locally(inputs, "Sum"), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_allreduce_fp16_compression(dtype):
    """Compression.fp16 reduces in float16 and hands back the input's dtype."""
    inputs = every_rank(lambda r: rank_floats(r, (6, 7), dtype=dtype))
    result = hvd.allreduce(inputs[hvd.rank()], compression=hvd.Compression.fp16, name=f"fp16.{dtype_id(dtype)}")
    expected = torch.stack([t.half().double() for t in inputs]).mean(0)
    assert result.dtype == dtype
    torch.testing.assert_close(result.double(), expected, rtol=4e-3, atol=4e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=dtype_id)
def test_allreduce_bf16_compression(dtype):
    """Compression.bf16 reduces in bfloat16, keeping float32's range, and hands back the
    input's dtype."""
    inputs = every_rank(lambda r: rank_floats(r, (6, 7), dtype=dtype) * 1e6)  # beyond float16's range
    result = hvd.allreduce(inputs[hvd.rank()], compression=hvd.Compression.bf16, name=f"bf16.{dtype_id(dtype)}")
    expected = torch.stack([t.bfloat16().double() for t in inputs]).mean(0)
    assert result.dtype == dtype
    assert torch.isfinite(result).all()
    # A few bfloat16 roundings of sums of magnitude ~1e6 (a step of 4096 there).
    torch.testing.assert_close(result.double(), expected, rtol=1e-2, atol=3e4)


def test_fp16_compression_leaves_integer_tensors_alone():
    inputs = every_rank(lambda r: rank_tensor(r, (5,), torch.int32))
    result = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, compression=hvd.Compression.fp16, name="fp16.int")
    assert_tensor(result, reduce_locally(inputs, "Sum"), torch.int32)


def test_compressors():
    """Compression.none passes tensors through; Compression.fp16 casts floating-point
    tensors to float16 and back to the context's dtype, and leaves others alone."""
    t = torch.linspace(-1, 1, 5, dtype=torch.float64)
    same, ctx = hvd.Compression.none.compress(t)
    assert same is t and hvd.Compression.none.decompress(same, ctx) is t
    half, ctx = hvd.Compression.fp16.compress(t)
    assert half.dtype == torch.float16
    back = hvd.Compression.fp16.decompress(half, ctx)
    assert back.dtype == torch.float64 and torch.allclose(back, t, atol=1e-3)
    ints = torch.arange(4, dtype=torch.int64)
    compressed, ctx = hvd.Compression.fp16.compress(ints)
    assert compressed.dtype == torch.int64
    assert hvd.Compression.fp16.decompress(compressed, ctx).dtype == torch.int64
    brain, ctx = hvd.Compression.bf16.compress(t)
    assert brain.dtype == torch.bfloat16
    assert hvd.Compression.bf16.decompress(brain, ctx).dtype == torch.float64
    half = t.half()
    assert hvd.Compression.bf16.compress(half)[0] is half  # as small already
    assert hvd.Compression.bf16.compress(ints)[0] is ints


# ---------------------------------------------------------------- grouped allreduce

GROUP_SHAPES = [(3,), (2, 4), (5, 1, 2)]


def group_inputs(dtype, seed=300):
    return [every_rank(lambda r, k=k, s=s: rank_tensor(r, s, dtype, seed=seed + k)) for k, s in enumerate(GROUP_SHAPES)]


@pytest.mark.parametrize("dtype", [torch.int32, torch.float64], ids=dtype_id)
def test_grouped_allreduce(dtype):
    """grouped_allreduce returns a list, one reduced tensor per input, inputs unchanged."""
    inputs = group_inputs(dtype)
    mine = [per_rank[hvd.rank()].clone() for per_rank in inputs]
    summed = hvd.grouped_allreduce(mine, op=hvd.Sum, name=f"grouped.sum.{dtype_id(dtype)}")
    averaged = hvd.grouped_allreduce(mine, name=f"grouped.average.{dtype_id(dtype)}")
    assert isinstance(summed, list) and len(summed) == len(GROUP_SHAPES)
    for k, per_rank in enumerate(inputs):
        assert_tensor(summed[k], reduce_locally(per_rank, "Sum"), dtype)
        assert_tensor(averaged[k], reduce_locally(per_rank, "Average"), dtype)
        assert torch.equal(mine[k], per_rank[hvd.rank()])


def test_grouped_allreduce_in_place():
    inputs = group_inputs(torch.float32, seed=310)
    mine = [per_rank[hvd.rank()].clone() for per_rank in inputs]
    hvd.grouped_allreduce_(mine, op=hvd.Max, name="grouped.inplace.max")
    for k, per_rank in enumerate(inputs):
        assert_tensor(mine[k], reduce_locally(per_rank, "Max"), torch.float32)


def test_grouped_allreduce_async():
    inputs = group_inputs(torch.float64, seed=320)
    mine = [per_rank[hvd.rank()].clone() for per_rank in inputs]
    outputs = hvd.synchronize(hvd.grouped_allreduce_async(mine, op=hvd.Sum, name="grouped.async"))
    assert len(outputs) == len(GROUP_SHAPES)
    for k, per_rank in enumerate(inputs):
        assert_tensor(outputs[k], reduce_locally(per_rank, "Sum"))
        assert torch.equal(mine[k], per_rank[hvd.rank()])


def test_grouped_allreduce_async_in_place():
    inputs = group_inputs(torch.int64, seed=330)
    mine = [per_rank[hvd.rank()].clone() for per_rank in inputs]
    hvd.synchronize(hvd.grouped_allreduce_async_(mine, op=hvd.Sum, name="grouped.async.inplace"))
    for k, per_rank in enumerate(inputs):
        assert_tensor(mine[k], reduce_locally(per_rank, "Sum"), torch.int64)


# ---------------------------------------------------------------- allgather


def gather_input(r, dtype, seed=400, trailing=(2, 3)):
    """Rank r holds r + 1 rows: the first dimension differs between ranks."""
    low = 0 if dtype == torch.uint8 else -20
    return rank_tensor(r, (r + 1,) + tuple(trailing), dtype, seed=seed, low=low)


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dtype_id)
def test_allgather_concatenates_in_rank_order(dtype):
    inputs = every_rank(lambda r: gather_input(r, dtype))
    result = hvd.allgather(inputs[hvd.rank()])
    assert_tensor(result, torch.cat(inputs), dtype)


def test_allgather_async():
    inputs = every_rank(lambda r: gather_input(r, torch.float32, seed=410))
    result = hvd.synchronize(hvd.allgather_async(inputs[hvd.rank()], name="allgather.async"))
    assert_tensor(result, torch.cat(inputs), torch.float32)


def test_allgather_of_bfloat16():
    """Horovod refuses bfloat16 tensors (ValueError); dtrain may gather them correctly."""
    inputs = every_rank(lambda r: gather_input(r, torch.bfloat16, seed=420))
    status, value = outcome_of(lambda: hvd.allgather(inputs[hvd.rank()], name="allgather.bf16"))
    assert_same_outcome_everywhere(status, value, "allgather.bf16.outcome")
    if status == "raised":
        assert isinstance(value, ValueError), repr(value)
    else:
        assert_tensor(value, torch.cat(inputs), torch.bfloat16)


def test_grouped_allgather():
    """One gathered tensor per input, each with its own first dimensions."""
    firsts = every_rank(lambda r: gather_input(r, torch.float64, seed=430, trailing=(3,)))
    seconds = every_rank(lambda r: rank_tensor(r, (2 * r + 1, 2, 2), torch.float64, seed=440))
    result = hvd.grouped_allgather([firsts[hvd.rank()], seconds[hvd.rank()]], name="grouped.allgather")
    handle = hvd.grouped_allgather_async([firsts[hvd.rank()], seconds[hvd.rank()]], name="grouped.allgather.async")
    result_async = hvd.synchronize(handle)
    # Horovod's grouped_allgather hands back its autograd function's tuple; a list would do too.
    assert isinstance(result, (list, tuple)) and len(result) == 2
    assert_tensor(result[0], torch.cat(firsts))
    assert_tensor(result[1], torch.cat(seconds))
    assert len(result_async) == 2
    assert_tensor(result_async[0], torch.cat(firsts))
    assert_tensor(result_async[1], torch.cat(seconds))


# ---------------------------------------------------------------- broadcast


def broadcast_inputs(dtype, seed):
    low = 0 if dtype == torch.uint8 else -20
    return every_rank(lambda r: rank_tensor(r, (3, 4), dtype, seed=seed, low=low))


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dtype_id)
def test_broadcast_from_every_root(dtype):
    """broadcast returns the root's tensor on every rank and leaves the input unchanged."""
    inputs = broadcast_inputs(dtype, seed=500)
    results, untouched = [], []
    for root in range(hvd.size()):
        mine = inputs[hvd.rank()].clone()
        results.append(hvd.broadcast(mine, root_rank=root, name=f"bcast.{dtype_id(dtype)}.{root}"))
        untouched.append(torch.equal(mine, inputs[hvd.rank()]))
    for root, result in enumerate(results):
        assert_tensor(result, inputs[root], dtype)
    assert all(untouched)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int64, torch.float16, torch.float64], ids=dtype_id)
def test_broadcast_in_place_from_every_root(dtype):
    inputs = broadcast_inputs(dtype, seed=510)
    tensors, returned = [], []
    for root in range(hvd.size()):
        mine = inputs[hvd.rank()].clone()
        returned.append(hvd.broadcast_(mine, root_rank=root, name=f"bcast_.{dtype_id(dtype)}.{root}"))
        tensors.append(mine)
    for root in range(hvd.size()):
        assert_tensor(tensors[root], inputs[root], dtype)
        assert_tensor(returned[root], inputs[root], dtype)


def test_broadcast_async_from_every_root():
    """broadcast_async (out of place) and broadcast_async_ (in place) through synchronize."""
    inputs = broadcast_inputs(torch.float32, seed=520)
    outs, in_place = [], []
    for root in range(hvd.size()):
        out = hvd.synchronize(hvd.broadcast_async(inputs[hvd.rank()], root_rank=root, name=f"bcast.async.{root}"))
        mine = inputs[hvd.rank()].clone()
        hvd.synchronize(hvd.broadcast_async_(mine, root_rank=root, name=f"bcast.async_.{root}"))
        outs.append(out)
        in_place.append(mine)
    for root in range(hvd.size()):
        assert_tensor(outs[root], inputs[root], torch.float32)
        assert_tensor(in_place[root], inputs[root], torch.float32)


def test_broadcast_of_bfloat16():
    """Horovod refuses bfloat16 tensors (ValueError); dtrain may broadcast them correctly."""
    inputs = broadcast_inputs(torch.bfloat16, seed=530)
    status, value = outcome_of(lambda: hvd.broadcast(inputs[hvd.rank()], root_rank=0, name="bcast.bf16"))
    assert_same_outcome_everywhere(status, value, "bcast.bf16.outcome")
    if status == "raised":
        assert isinstance(value, ValueError), repr(value)
    else:
        assert_tensor(value, inputs[0], torch.bfloat16)


# ---------------------------------------------------------------- alltoall


def alltoall_locally(inputs, splits_of, receiver):
    """What `receiver` gets: from each sender j, the rows j's splits reserve for it."""
    pieces = []
    for sender, tensor in enumerate(inputs):
        splits = splits_of(sender)
        offset = sum(splits[:receiver])
        pieces.append(tensor[offset:offset + splits[receiver]])
    return torch.cat(pieces)


def varied_splits(r):
    return [1 + (r + j) % 3 for j in range(hvd.size())]


@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dtype_id)
def test_alltoall_equal_split_returns_a_tensor(dtype):
    """Without splits the first dimension is cut into size() equal parts, and Horovod returns
    the gathered tensor alone (not a tuple)."""
    low = 0 if dtype == torch.uint8 else -20
    inputs = every_rank(lambda r: rank_tensor(r, (2 * hvd.size(), 3), dtype, seed=600, low=low))
    result = hvd.alltoall(inputs[hvd.rank()], name=f"alltoall.equal.{dtype_id(dtype)}")
    assert isinstance(result, torch.Tensor), type(result)
    assert_tensor(result, alltoall_locally(inputs, lambda r: [2] * hvd.size(), hvd.rank()), dtype)


@pytest.mark.parametrize("as_tensor", [False, True], ids=["list", "tensor"])
def test_alltoall_with_splits_returns_received_splits(as_tensor):
    """With splits (a list or an int32 tensor) Horovod returns (output, received_splits):
    received_splits[j] is how many rows came from rank j."""
    inputs = every_rank(lambda r: rank_tensor(r, (sum(varied_splits(r)), 2), torch.float64, seed=610))
    splits = varied_splits(hvd.rank())
    if as_tensor:
        splits = torch.tensor(splits, dtype=torch.int32)
    output, received = hvd.alltoall(inputs[hvd.rank()], splits=splits, name=f"alltoall.splits.{as_tensor}")
    assert_tensor(output, alltoall_locally(inputs, varied_splits, hvd.rank()))
    assert [int(n) for n in received] == [varied_splits(j)[hvd.rank()] for j in range(hvd.size())]


def test_alltoall_with_empty_segments():
    """A zero in splits sends nothing to that rank (here: nothing to oneself)."""
    def splits_of(r):
        return [0 if j == r else 2 for j in range(hvd.size())]

    inputs = every_rank(lambda r: rank_tensor(r, (sum(splits_of(r)), 3), torch.int64, seed=620))
    output, received = hvd.alltoall(inputs[hvd.rank()], splits=splits_of(hvd.rank()), name="alltoall.empty")
    assert_tensor(output, alltoall_locally(inputs, splits_of, hvd.rank()), torch.int64)
    assert [int(n) for n in received] == [splits_of(j)[hvd.rank()] for j in range(hvd.size())]


def test_alltoall_async_synchronize_returns_output_and_received_splits():
    """Horovod's synchronize() of an alltoall handle returns (output, received_splits), with
    or without splits (the handle keeps both outputs)."""
    inputs = every_rank(lambda r: rank_tensor(r, (sum(varied_splits(r)), 2), torch.float32, seed=630))
    even = every_rank(lambda r: rank_tensor(r, (hvd.size(), 2), torch.float32, seed=640))
    with_splits = hvd.synchronize(hvd.alltoall_async(inputs[hvd.rank()], splits=varied_splits(hvd.rank()),
                                                     name="alltoall.async.splits"))
    without = hvd.synchronize(hvd.alltoall_async(even[hvd.rank()], name="alltoall.async.even"))
    output, received = with_splits
    assert_tensor(output, alltoall_locally(inputs, varied_splits, hvd.rank()), torch.float32)
    assert [int(n) for n in received] == [varied_splits(j)[hvd.rank()] for j in range(hvd.size())]
    output, received = without
    assert_tensor(output, alltoall_locally(even, lambda r: [1] * hvd.size(), hvd.rank()), torch.float32)
    assert [int(n) for n in received] == [1] * hvd.size()


# ---------------------------------------------------------------- reducescatter


def share_of(rows, r):
    """Horovod's split of `rows` among ranks: rows // size each, the first rows % size ranks
    one more (ReducescatterOp::ComputeOutputShapeForRank)."""
    base, extra = divmod(rows, hvd.size())
    count = base + (1 if r < extra else 0)
    offset = r * base + min(r, extra)
    return offset, count


@pytest.mark.parametrize("op_name", ["Average", "Sum"])
@pytest.mark.parametrize("dtype", REDUCE_DTYPES, ids=dtype_id)
def test_reducescatter_of_uneven_rows(dtype, op_name):
    rows = 2 * hvd.size() + 1
    inputs = every_rank(lambda r: rank_tensor(r, (rows, 3), dtype, seed=700))
    result = hvd.reducescatter(inputs[hvd.rank()], op=getattr(hvd, op_name))
    offset, count = share_of(rows, hvd.rank())
    assert_tensor(result, reduce_locally(inputs, op_name)[offset:offset + count], dtype)


def test_reducescatter_default_op_is_average():
    rows = 3 * hvd.size()
    inputs = every_rank(lambda r: rank_tensor(r, (rows, 2), torch.float64, seed=710))
    result = hvd.reducescatter(inputs[hvd.rank()], name="reducescatter.default")
    offset, count = share_of(rows, hvd.rank())
    assert_tensor(result, reduce_locally(inputs, "Average")[offset:offset + count])


def test_reducescatter_scale_factors_and_async():
    rows = 2 * hvd.size()
    inputs = every_rank(lambda r: rank_tensor(r, (rows, 3), torch.float64, seed=720))
    scaled = hvd.reducescatter(inputs[hvd.rank()], op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0,
                               name="reducescatter.scaled")
    from_handle = hvd.synchronize(hvd.reducescatter_async(inputs[hvd.rank()], op=hvd.Sum, name="reducescatter.async"))
    offset, count = share_of(rows, hvd.rank())
    assert_tensor(scaled, 1.5 * reduce_locally(inputs, "Sum")[offset:offset + count])
    assert_tensor(from_handle, reduce_locally(inputs, "Sum")[offset:offset + count])


def test_grouped_reducescatter():
    shapes = [(hvd.size() + 1, 2), (2 * hvd.size(), 3, 2)]
    inputs = [every_rank(lambda r, k=k, s=s: rank_tensor(r, s, torch.float64, seed=730 + k)) for k, s in enumerate(shapes)]
    mine = [per_rank[hvd.rank()] for per_rank in inputs]
    summed = hvd.grouped_reducescatter(mine, op=hvd.Sum, name="grouped.reducescatter.sum")
    averaged = hvd.grouped_reducescatter(mine, name="grouped.reducescatter.average")
    from_handle = hvd.synchronize(hvd.grouped_reducescatter_async(mine, op=hvd.Sum, name="grouped.reducescatter.async"))
    assert isinstance(summed, list) and len(summed) == 2 and len(from_handle) == 2
    for k, (shape, per_rank) in enumerate(zip(shapes, inputs)):
        offset, count = share_of(shape[0], hvd.rank())
        assert_tensor(summed[k], reduce_locally(per_rank, "Sum")[offset:offset + count])
        assert_tensor(averaged[k], reduce_locally(per_rank, "Average")[offset:offset + count])
        assert_tensor(from_handle[k], reduce_locally(per_rank, "Sum")[offset:offset + count])


# ---------------------------------------------------------------- barrier


def test_barrier_waits_for_every_rank():
    """Each rank leaves a file before the barrier; after it, every rank sees all of them."""
    with shared_directory("barrier") as directory:
        with open(os.path.join(directory, f"arrived.{hvd.rank()}"), "w") as f:
            f.write("here")
        hvd.barrier()
        seen = sorted(os.listdir(directory))
    assert seen == sorted(f"arrived.{r}" for r in range(hvd.size()))


# ---------------------------------------------------------------- objects


class Payload:
    """A user class: picklable by reference, compared by value."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, Payload) and other.value == self.value


def object_of(r):
    return {
        "rank": r,
        "items": list(range(r + 2)),
        "nested": (r, {"text": "x" * (10 * r + 1)}, [None, 1.5]),
        "set": {r, -r - 1},
        "payload": Payload(r),
        "tensor": torch.arange(r + 1, dtype=torch.float64),
    }


def assert_object(actual, expected):
    tensor = expected["tensor"]
    rest = {k: v for k, v in expected.items() if k != "tensor"}
    assert {k: v for k, v in actual.items() if k != "tensor"} == rest
    assert torch.equal(actual["tensor"], tensor)


def test_broadcast_object_from_every_root():
    received = [hvd.broadcast_object(object_of(hvd.rank()), root_rank=root, name=f"object.{root}")
                for root in range(hvd.size())]
    for root, obj in enumerate(received):
        assert_object(obj, object_of(root))


def test_broadcast_object_defaults_to_root_zero():
    received = hvd.broadcast_object(object_of(hvd.rank()))
    assert_object(received, object_of(0))


def test_allgather_object():
    """A list of every rank's object, in rank order (their pickles differ in length)."""
    received = hvd.allgather_object(object_of(hvd.rank()))
    assert isinstance(received, list) and len(received) == hvd.size()
    for r, obj in enumerate(received):
        assert_object(obj, object_of(r))


# ---------------------------------------------------------------- gradients


def upstream(r, shape, seed=900):
    """Rank r's weights of its own loss, loss_r = (output * upstream(r)).sum()."""
    return rank_floats(r, shape, seed=seed)


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_allreduce_gradient(op_name):
    """Horovod's backward of allreduce is the allreduce of the output gradients with the
    same op: x.grad = sum of every rank's upstream weights (Sum) or their mean (Average),
    which is the gradient of the sum of every rank's loss."""
    x = rank_floats(hvd.rank(), (3, 4)).requires_grad_()
    y = hvd.allreduce(x, op=getattr(hvd, op_name), name=f"grad.allreduce.{op_name}")
    (y * upstream(hvd.rank(), (3, 4))).sum().backward()
    weights = torch.stack(every_rank(lambda r: upstream(r, (3, 4))))
    expected = weights.sum(0) if op_name == "Sum" else weights.mean(0)
    assert_tensor(y.detach(), reduce_locally(every_rank(lambda r: rank_floats(r, (3, 4))), op_name))
    assert_tensor(x.grad, expected)


def test_allreduce_gradient_with_scale_factors():
    """The backward applies the same prescale and postscale factors."""
    x = rank_floats(hvd.rank(), (5,)).requires_grad_()
    y = hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0, name="grad.allreduce.scaled")
    (y * upstream(hvd.rank(), (5,))).sum().backward()
    assert_tensor(x.grad, 2.0 * torch.stack(every_rank(lambda r: upstream(r, (5,)))).sum(0))


def test_grouped_allreduce_gradient():
    shapes = [(2, 3), (4,)]
    xs = [rank_floats(hvd.rank(), s, seed=910 + k).requires_grad_() for k, s in enumerate(shapes)]
    ys = hvd.grouped_allreduce(xs, op=hvd.Sum, name="grad.grouped.allreduce")
    sum((y * upstream(hvd.rank(), s, seed=920 + k)).sum() for k, (y, s) in enumerate(zip(ys, shapes))).backward()
    for k, s in enumerate(shapes):
        assert_tensor(xs[k].grad, torch.stack(every_rank(lambda r: upstream(r, s, seed=920 + k))).sum(0))


def test_allgather_gradient():
    """Horovod (since 0.22) averages the output gradients over ranks, then takes this rank's
    rows: x.grad = mean over ranks of their upstream weights, rows of this rank."""
    total = sum(r + 1 for r in range(hvd.size()))
    x = rank_floats(hvd.rank(), (hvd.rank() + 1, 3)).requires_grad_()
    y = hvd.allgather(x, name="grad.allgather")
    (y * upstream(hvd.rank(), (total, 3))).sum().backward()
    offset = sum(r + 1 for r in range(hvd.rank()))
    mean = torch.stack(every_rank(lambda r: upstream(r, (total, 3)))).mean(0)
    assert_tensor(x.grad, mean[offset:offset + hvd.rank() + 1])


def test_grouped_allgather_gradient():
    total = sum(r + 1 for r in range(hvd.size()))
    xs = [rank_floats(hvd.rank(), (hvd.rank() + 1, 2), seed=930).requires_grad_(),
          rank_floats(hvd.rank(), (hvd.rank() + 1,), seed=931).requires_grad_()]
    ys = hvd.grouped_allgather(xs, name="grad.grouped.allgather")
    ((ys[0] * upstream(hvd.rank(), (total, 2), seed=940)).sum()
     + (ys[1] * upstream(hvd.rank(), (total,), seed=941)).sum()).backward()
    offset = sum(r + 1 for r in range(hvd.rank()))
    rows = slice(offset, offset + hvd.rank() + 1)
    assert_tensor(xs[0].grad, torch.stack(every_rank(lambda r: upstream(r, (total, 2), seed=940))).mean(0)[rows])
    assert_tensor(xs[1].grad, torch.stack(every_rank(lambda r: upstream(r, (total,), seed=941))).mean(0)[rows])


def test_broadcast_gradient_from_every_root():
    """Horovod (since 0.22): the root's gradient is the mean of every rank's output gradient;
    the other ranks' inputs get zeros."""
    grads = []
    for root in range(hvd.size()):
        x = rank_floats(hvd.rank(), (2, 3), seed=950).requires_grad_()
        y = hvd.broadcast(x, root_rank=root, name=f"grad.broadcast.{root}")
        (y * upstream(hvd.rank(), (2, 3), seed=960 + root)).sum().backward()
        grads.append(x.grad)
    for root, grad in enumerate(grads):
        if hvd.rank() == root:
            expected = torch.stack(every_rank(lambda r: upstream(r, (2, 3), seed=960 + root))).mean(0)
        else:
            expected = torch.zeros(2, 3, dtype=torch.float64)
        assert_tensor(grad, expected)


def test_alltoall_gradient():
    """The backward sends each output row's gradient back to the rank it came from."""
    inputs = every_rank(lambda r: rank_floats(r, (sum(varied_splits(r)), 2), seed=970))
    x = inputs[hvd.rank()].clone().requires_grad_()
    output, _ = hvd.alltoall(x, splits=varied_splits(hvd.rank()), name="grad.alltoall")
    received_rows = [sum(varied_splits(j)[r] for j in range(hvd.size())) for r in range(hvd.size())]
    (output * upstream(hvd.rank(), (received_rows[hvd.rank()], 2), seed=980)).sum().backward()
    # Row i of this rank's input went to some rank j, which weighted it with its upstream.
    expected = []
    mine = varied_splits(hvd.rank())
    for j in range(hvd.size()):
        weights_j = upstream(j, (received_rows[j], 2), seed=980)
        start = sum(varied_splits(s)[j] for s in range(hvd.rank()))
        expected.append(weights_j[start:start + mine[j]])
    assert_tensor(x.grad, torch.cat(expected))


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
def test_reducescatter_gradient(op_name):
    """Horovod's backward (HorovodReducescatter.backward) allgathers the output gradients and,
    for Sum only, multiplies them by size(): x.grad = concatenation of every rank's upstream
    weights, times size() for Sum. (Both are size() times the gradient of the sum of every
    rank's loss; this is Horovod's behaviour, kept as it is.)"""
    rows = 2 * hvd.size() + 1
    x = rank_floats(hvd.rank(), (rows, 2), seed=990).requires_grad_()
    y = hvd.reducescatter(x, op=getattr(hvd, op_name), name=f"grad.reducescatter.{op_name}")
    (y * upstream(hvd.rank(), tuple(y.shape), seed=995)).sum().backward()
    gathered = torch.cat(every_rank(lambda r: upstream(r, (share_of(rows, r)[1], 2), seed=995)))
    expected = gathered * hvd.size() if op_name == "Sum" else gathered
    assert_tensor(x.grad, expected)


# ---------------------------------------------------------------- join (last)
# Horovod numbers unnamed operations from a per-process handle counter that every
# operation advances, so after a test in which ranks ran different operations, unnamed
# operations no longer meet. The join tests therefore come last.


def test_join_serves_the_allreduces_of_ranks_still_working():
    """The last rank joins at once; the others' allreduces complete with zeros in its place
    (Average still divides by size(), as in Horovod's join test); join() returns, on every
    rank, the rank that joined last, which cannot be the one that joined first."""
    first_to_join = hvd.size() - 1
    inputs = every_rank(lambda r: rank_tensor(r, (4, 3), torch.float64, seed=800))
    summed = averaged = None
    if hvd.rank() == first_to_join:
        last = hvd.join()
    else:
        summed = hvd.allreduce(inputs[hvd.rank()], op=hvd.Sum, name="join.sum")
        averaged = hvd.allreduce(inputs[hvd.rank()], op=hvd.Average, name="join.average")
        last = hvd.join()
    everyone = gather_objects(last, name="join.last")
    assert isinstance(last, int)
    assert everyone == [last] * hvd.size()
    assert 0 <= last < hvd.size()
    if hvd.size() > 1:
        assert last != first_to_join
    if hvd.rank() != first_to_join:
        working = [t for r, t in enumerate(inputs) if r != first_to_join]
        assert_tensor(summed, torch.stack(working).sum(0))
        assert_tensor(averaged, torch.stack(working).sum(0) / hvd.size())


def test_join_by_every_rank_at_once():
    last = hvd.join()
    everyone = gather_objects(last, name="join.together")
    assert isinstance(last, int) and 0 <= last < hvd.size()
    assert everyone == [last] * hvd.size()
