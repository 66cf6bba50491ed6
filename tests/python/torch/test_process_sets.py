"""``dtrain.torch`` process sets against Horovod's (docs/process_set.rst, horovod/common/process_sets.py).

Run as every rank of one job with 3 and 4 ranks. Sets are added and removed on every rank, in
the same order, as Horovod requires; each test removes what it added. Expected values are
computed from every rank's input, rebuilt locally (``multirank``).
"""
import pytest
import torch

import dtrain.torch as hvd
from dtrain.common.exceptions import HorovodInternalError
from multirank import assert_tensor, every_rank, outcome_of, rank_floats


def members_where(keep):
    return [r for r in range(hvd.size()) if keep(r)]


def test_the_global_process_set_is_every_rank():
    ps = hvd.global_process_set
    assert ps.process_set_id == 0
    assert ps.ranks == list(range(hvd.size()))
    assert (ps.size(), ps.rank(), ps.included()) == (hvd.size(), hvd.rank(), True)
    assert not hvd.remove_process_set(ps)


def test_sets_given_to_init_are_numbered_in_order():
    evens = hvd.ProcessSet(members_where(lambda r: r % 2 == 0))
    odds = hvd.ProcessSet([3, 1] if hvd.size() > 3 else [1])
    hvd.shutdown()
    hvd.init(process_sets=[evens, odds])
    assert (evens.process_set_id, odds.process_set_id) == (1, 2)
    assert odds.ranks == members_where(lambda r: r % 2 == 1)
    mine = evens if hvd.rank() % 2 == 0 else odds
    assert mine.included() and mine.rank() == hvd.rank() // 2 and mine.size() == len(mine.ranks)
    result = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, name="init.sets", process_set=mine)
    assert result.item() == sum(mine.ranks)
    assert hvd.remove_process_set(evens) and hvd.remove_process_set(odds)
    assert evens.process_set_id is None and not hvd.remove_process_set(evens)


def test_disjoint_sets_reduce_different_tensors_at_the_same_time():
    evens = hvd.add_process_set(members_where(lambda r: r % 2 == 0))
    odds = hvd.add_process_set(members_where(lambda r: r % 2 == 1))
    mine = evens if hvd.rank() % 2 == 0 else odds
    shape = (5,) if mine is evens else (2, 3)  # the same name, a shape of each set's own
    for step in range(10):
        in_set = hvd.allreduce_async(rank_floats(hvd.rank(), shape, seed=step), op=hvd.Sum, name="step",
                                     process_set=mine)
        in_job = hvd.allreduce_async(rank_floats(hvd.rank(), (4,), seed=100 + step), op=hvd.Sum, name="step")
        assert_tensor(hvd.synchronize(in_set), sum(rank_floats(r, shape, seed=step) for r in mine.ranks))
        assert_tensor(hvd.synchronize(in_job), sum(every_rank(lambda r: rank_floats(r, (4,), seed=100 + step))))
    hvd.remove_process_set(evens)
    hvd.remove_process_set(odds)


def test_every_collective_over_a_set():
    """Every rank but 0: the set's ranks (the order of allgather's rows, one alltoall split per
    member) differ from the job's, and roots are job ranks."""
    ps = hvd.add_process_set(range(1, hvd.size()))
    if ps.included():
        n, me, last = ps.size(), ps.rank(), ps.ranks[-1]
        assert me == hvd.rank() - 1
        summed = hvd.allreduce(rank_floats(hvd.rank(), (3,)), op=hvd.Sum, process_set=ps)
        assert_tensor(summed, sum(rank_floats(r, (3,)) for r in ps.ranks))
        averaged = hvd.grouped_allreduce([torch.ones(2) * hvd.rank(), torch.ones(3)], process_set=ps)
        assert_tensor(averaged[0], torch.ones(2) * sum(ps.ranks) / n, torch.float32)
        gathered = hvd.allgather(torch.full((me + 1, 2), hvd.rank()), process_set=ps)
        assert gathered[:, 0].tolist() == [r for m, r in enumerate(ps.ranks) for _ in range(m + 1)]
        sent = torch.full((3,), float(hvd.rank()))
        assert hvd.broadcast(sent, root_rank=last, process_set=ps).tolist() == [float(last)] * 3
        hvd.broadcast_(sent, root_rank=1, process_set=ps)
        assert sent.tolist() == [1.0] * 3
        received, splits = hvd.alltoall(torch.arange(2 * n) + 100 * hvd.rank(), splits=[2] * n, process_set=ps)
        assert splits.tolist() == [2] * n
        assert received.tolist() == [100 * r + 2 * me + k for r in ps.ranks for k in range(2)]
        share = hvd.reducescatter(torch.ones(2 * n, 2), op=hvd.Sum, process_set=ps)
        assert_tensor(share, torch.full((2, 2), float(n)))
        hvd.barrier(process_set=ps)
        assert hvd.broadcast_object({"from": hvd.rank()}, root_rank=last, process_set=ps) == {"from": last}
        assert hvd.allgather_object(hvd.rank(), process_set=ps) == ps.ranks
    else:
        assert ps.rank() == -1
        for call in (lambda: hvd.allreduce(torch.ones(1), process_set=ps), lambda: hvd.barrier(process_set=ps),
                     lambda: hvd.allgather_object(0, process_set=ps)):
            with pytest.raises(ValueError, match=rf"rank 0 is not in ProcessSet\(process_set_id={ps.process_set_id}"):
                call()
    hvd.remove_process_set(ps)


def test_gradients_flow_back_through_the_set():
    """Every rank but 0, upstream gradients that differ by rank and by row: a backward pass that
    numbered the members by their job ranks would take the wrong rows."""
    ps = hvd.add_process_set(range(1, hvd.size()))
    if ps.included():
        weight = float(hvd.rank() + 1)
        x = torch.full((3,), weight, requires_grad=True)
        y = hvd.allreduce(x, op=hvd.Sum, process_set=ps)
        (y * weight).sum().backward()
        assert_tensor(x.grad, torch.full((3,), float(sum(r + 1 for r in ps.ranks))))  # Sum of the members' upstream
        me = ps.rank()
        rows = torch.ones(me + 1, 2, requires_grad=True)
        gathered = hvd.allgather(rows, process_set=ps)
        total_rows = sum(m + 1 for m in range(ps.size()))
        assert gathered.shape == (total_rows, 2)
        row_weights = torch.arange(total_rows, dtype=torch.float32).unsqueeze(1) * weight
        (gathered * row_weights).sum().backward()
        # Horovod's rule: this rank's rows of the members' averaged upstream gradients.
        mean_weight = sum(r + 1 for r in ps.ranks) / ps.size()
        offset = sum(m + 1 for m in range(me))
        expected = torch.arange(offset, offset + me + 1, dtype=torch.float32).unsqueeze(1).expand(me + 1, 2)
        assert_tensor(rows.grad, expected * mean_weight)
        sent = torch.full((2,), weight, requires_grad=True)
        received = hvd.broadcast(sent, root_rank=ps.ranks[-1], process_set=ps)
        (received * weight).sum().backward()
        root_grad = torch.full((2,), mean_weight) if hvd.rank() == ps.ranks[-1] else torch.zeros(2)
        assert_tensor(sent.grad, root_grad)
    hvd.remove_process_set(ps)


def test_distributed_optimizer_averages_over_its_set():
    first = hvd.add_process_set([0])
    rest = hvd.add_process_set(range(1, hvd.size()))
    mine = first if hvd.rank() == 0 else rest
    layer = torch.nn.Linear(4, 1, bias=False)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(layer.parameters(), lr=1.0),
                                         named_parameters=layer.named_parameters(), process_set=mine)
    layer(torch.full((1, 4), float(hvd.rank() + 1))).sum().backward()
    optimizer.synchronize()
    mean = sum(r + 1 for r in mine.ranks) / len(mine.ranks)
    assert_tensor(layer.weight.grad, torch.full((1, 4), mean, dtype=torch.float32))
    other = rest if mine is first else first
    with pytest.raises(ValueError, match="is not in ProcessSet"):
        hvd.DistributedOptimizer(torch.optim.SGD(layer.parameters(), lr=1.0), process_set=other)
    hvd.remove_process_set(first)
    hvd.remove_process_set(rest)


def test_unnamed_operations_are_numbered_per_set():
    """Rank 0 alone runs unnamed operations on its set; the job's unnamed ones still meet."""
    solo = hvd.add_process_set([0])
    if solo.included():
        assert hvd.allreduce(torch.ones(1), process_set=solo).item() == 1.0
    assert hvd.allreduce(torch.ones(1), op=hvd.Sum).item() == hvd.size()
    hvd.remove_process_set(solo)


def test_misuse_fails_where_it_happens_and_disagreement_everywhere():
    with pytest.raises(ValueError, match="has not been added"):
        hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet([0, 1]))
    differing = [0, 1] if hvd.rank() == 0 else [0, 2]
    outcome, error = outcome_of(lambda: hvd.add_process_set(differing))
    assert outcome == "raised" and "rank 0 passes [0,1]; ranks 1," in str(error), error
    with pytest.raises(HorovodInternalError, match="rank 9 is outside"):
        hvd.add_process_set([0, 9])
    ps = hvd.add_process_set([1, 0])
    assert ps.ranks == [0, 1]
    with pytest.raises(HorovodInternalError, match="has these ranks already"):
        hvd.add_process_set([0, 1])
    with pytest.raises(ValueError, match="has been added already"):
        hvd.add_process_set(ps)
    assert hvd.remove_process_set(ps)
    with pytest.raises(ValueError, match="has not been added"):
        hvd.allreduce(torch.ones(1), process_set=ps)
