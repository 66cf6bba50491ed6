"""Each torch.distributed call over "dtrain" against the same call over gloo.

Every rank builds every rank's input from its rank number alone (integers, exact in every
dtype), so results are compared for equality wherever no division rounds.
"""
import pytest
import torch
import torch.distributed as dist

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8)
# What gloo reduces in PyTorch 1.13 (the others are compared with the exact result).
GLOO_DTYPES = (torch.float32, torch.float64, torch.float16, torch.int32, torch.int64, torch.uint8)


def rank_input(rank, shape, dtype, seed=0):
    """Rank ``rank``'s input: small integers as ``dtype`` (products stay exact for 3 ranks)."""
    g = torch.Generator().manual_seed(1000 * seed + rank)
    low = 0 if dtype == torch.uint8 else -4
    return torch.randint(low, 5, shape, generator=g).to(dtype)


def both(call, gloo, make):
    """``call(tensor, group)`` on a fresh input over "dtrain" (default group) and over gloo."""
    ours, theirs = make(), make()
    call(ours, None)
    call(theirs, gloo)
    return ours, theirs


def assert_same(ours, theirs):
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    assert torch.equal(ours, theirs), f"dtrain {ours} != gloo {theirs}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", [dist.ReduceOp.SUM, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT])
def test_all_reduce(gloo, dtype, op):
    rank, size = dist.get_rank(), dist.get_world_size()
    ours = rank_input(rank, (5, 3), dtype)
    dist.all_reduce(ours, op=op)
    if dtype in GLOO_DTYPES:
        theirs = rank_input(rank, (5, 3), dtype)
        dist.all_reduce(theirs, op=op, group=gloo)
        assert_same(ours, theirs)
    inputs = torch.stack([rank_input(r, (5, 3), dtype).double() for r in range(size)])
    exact = {dist.ReduceOp.SUM: inputs.sum(0), dist.ReduceOp.MIN: inputs.min(0).values,
             dist.ReduceOp.MAX: inputs.max(0).values, dist.ReduceOp.PRODUCT: inputs.prod(0)}[op]
    if dtype == torch.uint8:
        exact = exact.long() % 256  # uint8 wraps
    assert torch.equal(ours, exact.to(dtype))


def test_all_reduce_average_is_the_sum_over_size():
    rank, size = dist.get_rank(), dist.get_world_size()
    ours = rank_input(rank, (7,), torch.float64)
    dist.all_reduce(ours, op=dist.ReduceOp.AVG)
    expected = sum(rank_input(r, (7,), torch.float64) for r in range(size)) / size
    torch.testing.assert_close(ours, expected, rtol=1e-15, atol=0)


def test_all_reduce_of_a_non_contiguous_tensor(gloo):
    ours, theirs = both(lambda t, g: dist.all_reduce(t, group=g), gloo,
                        lambda: rank_input(dist.get_rank(), (4, 6), torch.float32).t())
    assert not ours.is_contiguous()
    assert_same(ours, theirs)


def test_all_reduce_coalesced(gloo):
    rank = dist.get_rank()
    ours = [rank_input(rank, (3,), torch.float32, seed=1), rank_input(rank, (2, 2), torch.float32, seed=2)]
    theirs = [t.clone() for t in ours]
    dist.all_reduce_coalesced(ours)
    dist.all_reduce_coalesced(theirs, group=gloo)
    for a, b in zip(ours, theirs):
        assert_same(a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast(gloo, dtype):
    root = dist.get_world_size() - 1
    ours = rank_input(dist.get_rank(), (4, 2), dtype)
    dist.broadcast(ours, src=root)
    assert torch.equal(ours, rank_input(root, (4, 2), dtype))
    if dtype in GLOO_DTYPES:
        theirs = rank_input(dist.get_rank(), (4, 2), dtype)
        dist.broadcast(theirs, src=root, group=gloo)
        assert_same(ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_gather(gloo, dtype):
    rank, size = dist.get_rank(), dist.get_world_size()
    ours = [torch.empty(2, 3, dtype=dtype) for _ in range(size)]
    dist.all_gather(ours, rank_input(rank, (2, 3), dtype))
    for r in range(size):
        assert torch.equal(ours[r], rank_input(r, (2, 3), dtype))
    if dtype in GLOO_DTYPES:
        theirs = [torch.empty(2, 3, dtype=dtype) for _ in range(size)]
        dist.all_gather(theirs, rank_input(rank, (2, 3), dtype), group=gloo)
        for a, b in zip(ours, theirs):
            assert_same(a, b)


def test_all_gather_into_one_tensor(gloo):
    rank, size = dist.get_rank(), dist.get_world_size()
    ours = torch.empty(size * 2, 3)
    dist._all_gather_base(ours, rank_input(rank, (2, 3), torch.float32))
    theirs = torch.cat([rank_input(r, (2, 3), torch.float32) for r in range(size)])
    assert_same(ours, theirs)


def test_reduce(gloo):
    rank, size = dist.get_rank(), dist.get_world_size()
    root = 1 % size
    ours, theirs = both(lambda t, g: dist.reduce(t, dst=root, group=g), gloo,
                        lambda: rank_input(rank, (6,), torch.int64))
    if rank == root:
        assert_same(ours, theirs)
    else:
        assert torch.equal(ours, rank_input(rank, (6,), torch.int64)), "a non-root rank's tensor changed"


def test_gather(gloo):
    rank, size = dist.get_rank(), dist.get_world_size()
    root = size - 1
    lists = [[torch.empty(3) for _ in range(size)] if rank == root else None for _ in range(2)]
    dist.gather(rank_input(rank, (3,), torch.float32), lists[0], dst=root)
    dist.gather(rank_input(rank, (3,), torch.float32), lists[1], dst=root, group=gloo)
    if rank == root:
        for a, b in zip(*lists):
            assert_same(a, b)


def test_scatter(gloo):
    rank, size = dist.get_rank(), dist.get_world_size()
    pieces = [rank_input(r, (2, 2), torch.float64, seed=5) for r in range(size)] if rank == 0 else None
    ours, theirs = torch.empty(2, 2, dtype=torch.float64), torch.empty(2, 2, dtype=torch.float64)
    dist.scatter(ours, pieces, src=0)
    dist.scatter(theirs, pieces, src=0, group=gloo)
    assert_same(ours, theirs)
    assert torch.equal(ours, rank_input(rank, (2, 2), torch.float64, seed=5))


@pytest.mark.parametrize("op", [dist.ReduceOp.SUM, dist.ReduceOp.MAX])
def test_reduce_scatter(op):
    # gloo has no reduce_scatter in PyTorch 1.13: held against the exact result.
    rank, size = dist.get_rank(), dist.get_world_size()
    inputs = [[rank_input(r, (3,), torch.float32, seed=10 + i) for i in range(size)] for r in range(size)]
    ours = torch.empty(3)
    dist.reduce_scatter(ours, inputs[rank], op=op)
    stacked = torch.stack([inputs[r][rank] for r in range(size)])
    expected = stacked.sum(0) if op == dist.ReduceOp.SUM else stacked.max(0).values
    assert torch.equal(ours, expected)


def test_reduce_scatter_from_one_tensor():
    rank, size = dist.get_rank(), dist.get_world_size()
    ours = torch.empty(2, 2, dtype=torch.int64)
    dist._reduce_scatter_base(ours, rank_input(rank, (2 * size, 2), torch.int64))
    expected = sum(rank_input(r, (2 * size, 2), torch.int64) for r in range(size))[2 * rank:2 * rank + 2]
    assert torch.equal(ours, expected)


def test_all_to_all_single_equal_and_uneven_splits(gloo):
    rank, size = dist.get_rank(), dist.get_world_size()
    ours, theirs = torch.empty(size * 2, 3), torch.empty(size * 2, 3)
    dist.all_to_all_single(ours, rank_input(rank, (size * 2, 3), torch.float32))
    dist.all_to_all_single(theirs, rank_input(rank, (size * 2, 3), torch.float32), group=gloo)
    assert_same(ours, theirs)
    # Rank r sends r + d + 1 rows to rank d.
    send = [rank + d + 1 for d in range(size)]
    receive = [r + rank + 1 for r in range(size)]
    ours, theirs = torch.empty(sum(receive), 2), torch.empty(sum(receive), 2)
    for out, group in ((ours, None), (theirs, gloo)):
        dist.all_to_all_single(out, rank_input(rank, (sum(send), 2), torch.float32), receive, send, group=group)
    assert_same(ours, theirs)


def test_all_to_all_of_tensor_lists():
    rank, size = dist.get_rank(), dist.get_world_size()
    inputs = [torch.full((d + 1,), float(10 * rank + d)) for d in range(size)]
    outputs = [torch.empty(rank + 1) for _ in range(size)]
    dist.all_to_all(outputs, inputs)
    for r in range(size):
        assert torch.equal(outputs[r], torch.full((rank + 1,), float(10 * r + rank)))


def test_async_work_and_its_future():
    rank, size = dist.get_rank(), dist.get_world_size()
    tensors = [rank_input(rank, (4,), torch.float32, seed=s) for s in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [w.get_future() for w in works]
    chained = futures[0].then(lambda f: f.value()[0] * 2)
    for w in works:
        w.wait()
        assert w.is_completed() and w.is_success()
    for s, t in enumerate(tensors):
        assert torch.equal(t, sum(rank_input(r, (4,), torch.float32, seed=s) for r in range(size)))
    assert torch.equal(futures[1].wait()[0], tensors[1])
    assert torch.equal(chained.wait(), tensors[0] * 2)


def test_barrier_and_objects():
    rank, size = dist.get_rank(), dist.get_world_size()
    dist.barrier()
    gathered = [None] * size
    dist.all_gather_object(gathered, {"rank": rank, "name": f"r{rank}"})
    assert gathered == [{"rank": r, "name": f"r{r}"} for r in range(size)]
    objects = [f"from {rank}", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(objects, src=0)
    assert objects == ["from 0", 0]


def test_group_over_the_whole_world_is_a_second_dtrain_group():
    group = dist.new_group(backend="dtrain")
    t = torch.ones(3)
    dist.all_reduce(t, group=group)
    assert torch.equal(t, torch.full((3,), float(dist.get_world_size())))


def test_a_group_over_part_of_the_world_matches_gloo(gloo):
    """new_group(ranks=...) over "dtrain" (a process set of the members) against the same group
    over gloo: every rank but 0, whose group ranks are their places in the list."""
    rank, size = dist.get_rank(), dist.get_world_size()
    members = list(range(1, size))
    ours, theirs = dist.new_group(ranks=members, backend="dtrain"), dist.new_group(ranks=members, backend="gloo")
    if rank in members:
        for group in (ours, theirs):
            assert dist.get_rank(group) == rank - 1 and dist.get_world_size(group) == len(members)
        ours_sum, gloo_sum = rank_input(rank, (4, 2), torch.int64), rank_input(rank, (4, 2), torch.int64)
        dist.all_reduce(ours_sum, group=ours)
        dist.all_reduce(gloo_sum, group=theirs)
        assert_same(ours_sum, gloo_sum)
        assert torch.equal(ours_sum, sum(rank_input(r, (4, 2), torch.int64) for r in members))
        sent = {g: torch.full((3,), float(rank)) for g in (ours, theirs)}
        for group, t in sent.items():
            dist.broadcast(t, src=size - 1, group=group)  # src is a rank of the world
        assert_same(sent[ours], sent[theirs])
        gathered = {g: [torch.empty(2) for _ in members] for g in (ours, theirs)}
        for group, outputs in gathered.items():
            dist.all_gather(outputs, torch.full((2,), float(rank)), group=group)
        assert [t[0].item() for t in gathered[ours]] == [float(r) for r in members]
        for a, b in zip(gathered[ours], gathered[theirs]):
            assert_same(a, b)
        dist.barrier(group=ours)
    dist.barrier()


def test_point_to_point_is_refused_naming_it():
    with pytest.raises(RuntimeError, match="dtrain backend: send: point-to-point"):
        dist.send(torch.ones(1), dst=(dist.get_rank() + 1) % dist.get_world_size())


def test_an_unsupported_op_is_refused_naming_it():
    with pytest.raises(RuntimeError, match="dtrain backend: allreduce: reduce op"):
        dist.all_reduce(torch.ones(1, dtype=torch.int32), op=dist.ReduceOp.BAND)


def test_a_shape_mismatch_between_ranks_is_an_error_on_every_rank():
    rank = dist.get_rank()
    with pytest.raises(RuntimeError, match="dtrain"):
        dist.all_reduce(torch.ones(2 + rank))
    t = torch.ones(2)  # the world goes on
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((2,), float(dist.get_world_size())))


def test_different_collectives_at_the_same_call_are_an_error_on_every_rank():
    rank = dist.get_rank()
    t = torch.ones(4)
    with pytest.raises(RuntimeError, match="dtrain"):
        if rank == 0:
            dist.broadcast(t, src=0)
        else:
            dist.all_reduce(t)
    t = torch.ones(2)  # the world goes on
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((2,), float(dist.get_world_size())))


def test_a_dtype_without_an_engine_is_refused_naming_it():
    with pytest.raises(RuntimeError, match="dtrain backend: allreduce: .*Bool"):
        dist.all_reduce(torch.ones(2, dtype=torch.bool))
