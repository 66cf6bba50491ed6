"""DistributedDataParallel over "dtrain" trains to the parameters DDP over gloo reaches.

Two replicas of one model start from the same weights on every rank; one is wrapped by DDP
over the default group ("dtrain"), the other over a gloo group; both see the same batches.
After 20 steps in float64 their parameters agree to 1e-9 (the order of a 3-rank sum may
differ between the engines, nothing more).
"""
import copy

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 20


class Net(nn.Module):
    """Two layers, and a branch only some steps use (for find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(8, 16)
        self.second = nn.Linear(16, 4)
        self.sometimes = nn.Linear(16, 4)

    def forward(self, x, use_branch=False):
        h = torch.tanh(self.first(x))
        out = self.second(h)
        return out + self.sometimes(h) if use_branch else out


def batch(step, rank):
    g = torch.Generator().manual_seed(100 * step + rank)
    return torch.randn(6, 8, generator=g, dtype=torch.float64), torch.randn(6, 4, generator=g, dtype=torch.float64)


def train(model, group, *, find_unused=False, accumulate=1, hook=None, branch_every=0, **ddp_options):
    rank = dist.get_rank()
    ddp = DDP(model, process_group=group, find_unused_parameters=find_unused, **ddp_options)
    if hook is not None:
        ddp.register_comm_hook(state=group, hook=hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        # With branch_every, some steps use the branch on some ranks only: its gradient is then
        # partly missing. Without, every step uses every parameter.
        use_branch = (step + rank) % branch_every == 0 if branch_every else True
        x, y = batch(step, rank)
        last_of_accumulation = (step + 1) % accumulate == 0
        context = ddp.no_sync() if not last_of_accumulation else _nothing()
        with context:
            loss = nn.functional.mse_loss(ddp(x, use_branch=use_branch), y)
            loss.backward()
        if last_of_accumulation:
            optimizer.step()
            optimizer.zero_grad()
    return model


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def replicas():
    torch.manual_seed(7)
    model = Net().double()
    return model, copy.deepcopy(model)


def assert_parameters_close(ours, theirs, atol):
    for (name, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert torch.allclose(a, b, rtol=0, atol=atol), f"{name}: max difference {(a - b).abs().max().item()}"


@pytest.mark.parametrize("find_unused", [False, True])
def test_training_matches_gloo(gloo, find_unused):
    ours, theirs = replicas()
    branch_every = 3 if find_unused else 0
    train(ours, None, find_unused=find_unused, branch_every=branch_every)
    train(theirs, gloo, find_unused=find_unused, branch_every=branch_every)
    assert_parameters_close(ours, theirs, atol=1e-9)
    start, _ = replicas()
    assert not torch.allclose(ours.first.weight, start.first.weight), "the model did not train"


def test_no_sync_gradient_accumulation_matches_gloo(gloo):
    ours, theirs = replicas()
    train(ours, None, accumulate=2)
    train(theirs, gloo, accumulate=2)
    assert_parameters_close(ours, theirs, atol=1e-9)


@pytest.mark.parametrize("options", [dict(gradient_as_bucket_view=True), dict(static_graph=True),
                                     dict(bucket_cap_mb=0.0005)], ids=["bucket_view", "static_graph", "tiny_buckets"])
def test_ddp_options_match_gloo(gloo, options):
    ours, theirs = replicas()
    train(ours, None, **options)
    train(theirs, gloo, **options)
    assert_parameters_close(ours, theirs, atol=1e-9)


def test_allreduce_comm_hook_matches_gloo(gloo):
    ours, theirs = replicas()
    train(ours, None, hook=default_hooks.allreduce_hook)
    train(theirs, gloo, hook=default_hooks.allreduce_hook)
    assert_parameters_close(ours, theirs, atol=1e-9)


def test_fp16_compress_hook_matches_gloo(gloo):
    # Gradients travel as float16: each engine rounds the sum in its own order, so the
    # replicas agree to float16's precision, not float64's.
    ours, theirs = replicas()
    train(ours, None, hook=default_hooks.fp16_compress_hook)
    train(theirs, gloo, hook=default_hooks.fp16_compress_hook)
    assert_parameters_close(ours, theirs, atol=2e-3)
    plain, _ = replicas()
    train(plain, gloo)
    assert_parameters_close(ours, plain, atol=2e-2)


@pytest.mark.parametrize("warm_start", [True, False])
def test_power_sgd_hook_matches_gloo(gloo, warm_start):
    """PyTorch's own PowerSGD hook (rank-1 factors, error feedback) over "dtrain": its
    allreduces of P and Q and its future chaining give what they give over gloo."""
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd

    def train_with_power_sgd(model, group):
        state = powersgd.PowerSGDState(process_group=group, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                       min_compression_rate=0.5, warm_start=warm_start, random_seed=3)
        ddp = DDP(model, process_group=group)
        ddp.register_comm_hook(state, powersgd.powerSGD_hook)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        for step in range(STEPS):
            x, y = batch(step, dist.get_rank())
            nn.functional.mse_loss(ddp(x, use_branch=True), y).backward()
            optimizer.step()
            optimizer.zero_grad()
        return model

    ours, theirs = replicas()
    train_with_power_sgd(ours, None)
    train_with_power_sgd(theirs, gloo)
    assert_parameters_close(ours, theirs, atol=1e-9)
    plain, _ = replicas()
    train(plain, gloo)
    difference = max((a - b).abs().max().item() for a, b in zip(ours.parameters(), plain.parameters()))
    assert difference > 1e-6, "the hook compressed nothing: its rank-1 factors should differ from exact sums"


def test_replicas_agree_across_ranks():
    model, _ = replicas()
    train(model, None, find_unused=True, branch_every=2)
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, flat)
    for other in gathered:
        assert torch.equal(other, flat)
