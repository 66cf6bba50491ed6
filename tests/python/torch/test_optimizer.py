"""``hvd.DistributedOptimizer`` and the broadcast helpers against training in one process.

Each rank trains a small float64 network on its own shard of a fixed dataset; the reference
is plain PyTorch in one process that sees every rank's shard. With a mean loss and shards of
equal size, averaging the ranks' gradients (Horovod's default op) equals the gradient of the
mean loss over the concatenated batch, so the parameters must agree to 1e-9 after every
step. Horovod's semantics are those of horovod/torch/optimizer.py and functions.py.
"""
import copy
import os

import pytest
import torch
import torch.nn.functional as F

import dtrain.torch as hvd
from dtrain.torch import sharding as zero
from multirank import assert_state_equal, gather_objects, generator, shared_directory

STEPS = 20
BATCH = 4  # rows of one rank's batch
FEATURES, HIDDEN, OUTPUTS = 5, 8, 3
TOLERANCE = 1e-9


def make_model(seed=2024):
    """A small MLP in float64, its weights a function of `seed` only."""
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.Tanh(),
                                torch.nn.Linear(HIDDEN, OUTPUTS)).double()
    fill_parameters(model, seed)
    return model


def fill_parameters(model, seed):
    g = generator(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64))


def make_data(batches):
    """A fixed dataset of `batches` batches of BATCH rows, the same on every rank."""
    g = generator(31337)
    x = torch.randn(batches * BATCH, FEATURES, generator=g, dtype=torch.float64)
    y = torch.randn(batches * BATCH, OUTPUTS, generator=g, dtype=torch.float64)
    return x, y


def batch(data, index):
    x, y = data
    return x[index * BATCH:(index + 1) * BATCH], y[index * BATCH:(index + 1) * BATCH]


def shard_index(step, r, micro=0, micro_batches=1):
    """Rank r's batch of a step: steps, then micro-batches, then ranks, in the data's order."""
    return (step * micro_batches + micro) * hvd.size() + r


def distributed(model, optimizer, **kwargs):
    return hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(), **kwargs)


def train_distributed(model, optimizer, data, steps=STEPS, micro_batches=1, first=0):
    """The Horovod training loop: this rank's shard, backward, step (steps first, first + 1, ...)."""
    for step in range(first, first + steps):
        optimizer.zero_grad()
        for micro in range(micro_batches):
            x, y = batch(data, shard_index(step, hvd.rank(), micro, micro_batches))
            F.mse_loss(model(x), y).backward()
        optimizer.step()


def reference_gradients(model, data, step, weight, micro_batches=1, ranks=None, forward=None):
    """Accumulates, in one process, weight * the gradient of every rank's loss of `step`."""
    forward = forward or (lambda m, x, r: m(x))
    ranks = range(hvd.size()) if ranks is None else ranks
    for micro in range(micro_batches):
        for r in ranks:
            x, y = batch(data, shard_index(step, r, micro, micro_batches))
            (weight * F.mse_loss(forward(model, x, r), y)).backward()


def train_reference(model, optimizer, data, steps=STEPS, weight=None, micro_batches=1, forward=None):
    weight = 1.0 / hvd.size() if weight is None else weight
    for step in range(steps):
        optimizer.zero_grad()
        reference_gradients(model, data, step, weight, micro_batches, forward=forward)
        optimizer.step()


def max_difference(model, reference):
    return max((p - q).abs().max().item() for p, q in zip(model.parameters(), reference.parameters()))


def assert_parameters_close(model, reference, tolerance=TOLERANCE):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert p.dtype == q.dtype
        difference = (p.detach() - q.detach()).abs().max().item()
        assert difference <= tolerance, f"{name}: differs by {difference:.3g} from one process"


OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_training_matches_one_process_on_the_concatenated_batch(kind):
    """20 steps on each rank's shard equal 20 steps of plain PyTorch on the concatenation of
    every rank's shard (a mean loss over the whole batch)."""
    data = make_data(STEPS * hvd.size())
    model = make_model()
    optimizer = distributed(model, OPTIMIZERS[kind](model.parameters()))
    train_distributed(model, optimizer, data)

    reference = make_model()
    plain = OPTIMIZERS[kind](reference.parameters())
    per_step = hvd.size() * BATCH
    for step in range(STEPS):
        plain.zero_grad()
        x, y = data[0][step * per_step:(step + 1) * per_step], data[1][step * per_step:(step + 1) * per_step]
        F.mse_loss(reference(x), y).backward()
        plain.step()
    assert isinstance(optimizer, type(plain)), "DistributedOptimizer is not an instance of the optimizer it wraps"
    assert_parameters_close(model, reference)


def test_op_sum_adds_the_gradients():
    """op=hvd.Sum: the gradient is the sum of every rank's gradient."""
    data = make_data(STEPS * hvd.size())
    model = make_model()
    train_distributed(model, distributed(model, torch.optim.SGD(model.parameters(), lr=0.02), op=hvd.Sum), data)
    reference = make_model()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.02), data, weight=1.0)
    assert_parameters_close(model, reference)


def test_gradient_predivide_factor_still_averages():
    """gradient_predivide_factor splits the average into 1/f before the sum and f/size after
    it: the same result as a plain average."""
    data = make_data(STEPS * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                            gradient_predivide_factor=4.0)
    train_distributed(model, optimizer, data)
    reference = make_model()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), data)
    assert_parameters_close(model, reference)


def test_backward_passes_per_step_accumulates_locally():
    """backward_passes_per_step=2: two backward passes add up in .grad, then one average over
    ranks at step(): the gradient is the sum of both micro-batches' gradients, averaged."""
    data = make_data(STEPS * 2 * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                            backward_passes_per_step=2)
    train_distributed(model, optimizer, data, micro_batches=2)
    reference = make_model()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9), data,
                    micro_batches=2)
    assert_parameters_close(model, reference)


def test_synchronize_then_clip_then_step_without_synchronizing():
    """optimizer.synchronize() averages the gradients, clip_grad_norm_ clips the averaged
    ones, and step() under skip_synchronize() applies them."""
    max_norm = 0.05
    data = make_data(STEPS * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    for step in range(STEPS):
        optimizer.zero_grad()
        x, y = batch(data, shard_index(step, hvd.rank()))
        F.mse_loss(model(x), y).backward()
        optimizer.synchronize()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        with optimizer.skip_synchronize():
            optimizer.step()

    reference = make_model()
    plain = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    clipped = 0
    for step in range(STEPS):
        plain.zero_grad()
        reference_gradients(reference, data, step, 1.0 / hvd.size())
        clipped += torch.nn.utils.clip_grad_norm_(reference.parameters(), max_norm).item() > max_norm
        plain.step()
    assert clipped > 0, "the clipping never applied: the test would not see where it happens"
    assert_parameters_close(model, reference)


def test_step_after_synchronize_reduces_once():
    """step() after synchronize() outside skip_synchronize() steps on the gradients reduced once
    (where Horovod reduces a second time and warns): with op=Sum a second reduction would
    multiply the gradients by size() again."""
    data = make_data(hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1 / hvd.size()), op=hvd.Sum)
    x, y = batch(data, shard_index(0, hvd.rank()))
    F.mse_loss(model(x), y).backward()
    optimizer.synchronize()
    optimizer.step()
    reference = make_model()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.1), data, steps=1)
    assert_parameters_close(model, reference)


@pytest.mark.parametrize("compression, tolerance", [("fp16", 5e-3), ("bf16", 3e-2)])
def test_compression(compression, tolerance):
    """Compression.fp16 / bf16 reduce the gradients in float16 / bfloat16: close to the exact
    result (their rounding over 20 steps; bfloat16 keeps 3 bits less), yet visibly not equal
    to it, and the parameters stay float64."""
    data = make_data(STEPS * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1),
                            compression=getattr(hvd.Compression, compression))
    train_distributed(model, optimizer, data)
    reference = make_model()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.1), data)
    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert_parameters_close(model, reference, tolerance=tolerance)
    assert max_difference(model, reference) > 1e-9, f"no {compression} rounding: the gradients were not compressed"


@pytest.mark.parametrize("groups", ["lists", "count"])
def test_groups(groups):
    """groups= (lists of parameters reduced together, or a number of groups) changes how
    gradients are batched, not the result."""
    data = make_data(STEPS * hvd.size())
    model = make_model()
    if groups == "lists":
        chosen = [[model[0].weight, model[0].bias], [model[2].weight]]  # model[2].bias: a group of its own
    else:
        chosen = 2
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), groups=chosen)
    train_distributed(model, optimizer, data)
    reference = make_model()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), data)
    assert_parameters_close(model, reference)


class TwoHeads(torch.nn.Module):
    """A trunk and two heads; a caller may leave head_b out of the forward pass."""

    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Linear(FEATURES, HIDDEN)
        self.head_a = torch.nn.Linear(HIDDEN, OUTPUTS)
        self.head_b = torch.nn.Linear(HIDDEN, OUTPUTS)
        self.double()
        fill_parameters(self, 77)

    def forward(self, x, use_head_b):
        hidden = torch.tanh(self.trunk(x))
        out = self.head_a(hidden)
        return out + self.head_b(hidden) if use_head_b else out


def test_parameter_without_gradient_on_some_ranks():
    """Only rank 0 uses head_b, so head_b has no gradient elsewhere: Horovod reduces zeros for
    it there (no hang) and every rank applies rank 0's gradient divided by size()."""
    steps = 5
    data = make_data(steps * hvd.size())
    model = TwoHeads()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    for step in range(steps):
        optimizer.zero_grad()
        x, y = batch(data, shard_index(step, hvd.rank()))
        F.mse_loss(model(x, use_head_b=hvd.rank() == 0), y).backward()
        optimizer.step()
    reference = TwoHeads()
    train_reference(reference, torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9), data, steps=steps,
                    forward=lambda m, x, r: m(x, use_head_b=r == 0))
    assert_parameters_close(model, reference)


def test_scheduler_drives_the_distributed_optimizer():
    """The wrapped optimizer is still the optimizer (an lr scheduler accepts it and its lr
    changes apply)."""
    steps = 4
    data = make_data(steps * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.2))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for step in range(steps):
        optimizer.zero_grad()
        x, y = batch(data, shard_index(step, hvd.rank()))
        F.mse_loss(model(x), y).backward()
        optimizer.step()
        scheduler.step()
    reference = make_model()
    plain = torch.optim.SGD(reference.parameters(), lr=0.2)
    plain_scheduler = torch.optim.lr_scheduler.StepLR(plain, step_size=1, gamma=0.5)
    for step in range(steps):
        plain.zero_grad()
        reference_gradients(reference, data, step, 1.0 / hvd.size())
        plain.step()
        plain_scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.2 * 0.5 ** steps)
    assert_parameters_close(model, reference)


def test_distributed_optimizer_argument_checks():
    """Horovod's ValueErrors for arguments it cannot honour."""
    model = make_model()

    def sgd():
        return torch.optim.SGD(model.parameters(), lr=0.1)

    with pytest.raises(ValueError):
        distributed(model, sgd(), backward_passes_per_step=0)
    with pytest.raises(ValueError):
        distributed(model, sgd(), op=hvd.Sum, gradient_predivide_factor=2.0)
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(sgd(), named_parameters=[("same", p) for p in model.parameters()])
    with pytest.raises(ValueError):
        hvd.DistributedOptimizer(sgd(), named_parameters=list(model.named_parameters())[:1])


# ---------------------------------------------------------------- broadcasts


class WithBuffers(torch.nn.Module):
    """Parameters and buffers (BatchNorm's running statistics)."""

    def __init__(self, seed):
        super().__init__()
        self.linear = torch.nn.Linear(FEATURES, HIDDEN)
        self.norm = torch.nn.BatchNorm1d(HIDDEN)
        self.double()
        g = generator(seed)
        with torch.no_grad():
            for tensor in list(self.parameters()) + [self.norm.running_mean, self.norm.running_var]:
                tensor.copy_(torch.rand(tensor.shape, generator=g, dtype=torch.float64) + 0.5)
            self.norm.num_batches_tracked.fill_(seed)


def test_broadcast_parameters_of_a_state_dict():
    """broadcast_parameters(model.state_dict(), root_rank=0) gives every rank rank 0's
    parameters and buffers, in place."""
    model = WithBuffers(seed=100 + hvd.rank())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    assert_state_equal(model.state_dict(), WithBuffers(seed=100).state_dict())


def test_broadcast_parameters_of_named_parameters_from_the_last_rank():
    """A list of (name, parameter) pairs works too, from any root."""
    root = hvd.size() - 1
    model = WithBuffers(seed=200 + hvd.rank())
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=root)
    expected = WithBuffers(seed=200 + root)
    for (name, p), q in zip(model.named_parameters(), expected.parameters()):
        assert torch.equal(p.detach(), q.detach()), name
    # Buffers are not parameters: they stay this rank's own.
    assert torch.equal(model.norm.running_mean, WithBuffers(seed=200 + hvd.rank()).norm.running_mean)


STATEFUL = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
    "adamw": lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda params: torch.optim.RMSprop(params, lr=0.01, momentum=0.5, centered=True),
    "adagrad": lambda params: torch.optim.Adagrad(params, lr=0.1),
}


def stepped_optimizer(kind, batches, lr=None):
    """A plain optimizer over a fresh model after steps on the given batches, its lr then set."""
    data = make_data(4 * hvd.size())
    model = make_model()
    optimizer = STATEFUL[kind](model.parameters())
    for index in batches:
        optimizer.zero_grad()
        x, y = batch(data, index)
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    if lr is not None:
        for group in optimizer.param_groups:
            group["lr"] = lr
    return optimizer


@pytest.mark.parametrize("situation", ["only_root_stepped", "every_rank_stepped_differently"])
@pytest.mark.parametrize("kind", sorted(STATEFUL))
def test_broadcast_optimizer_state(kind, situation):
    """After broadcast_optimizer_state(optimizer, root_rank=0) every rank's state_dict (the
    per-parameter state and options such as the lr rank 0 changed) equals rank 0's.
    Rank 0's is rebuilt here by replaying what rank 0 did."""
    def what_rank_did(r):
        if situation == "only_root_stepped":
            return [0, 1] if r == 0 else []
        return [r, r + 1]

    lr = 0.0123 if hvd.rank() == 0 else None
    optimizer = stepped_optimizer(kind, what_rank_did(hvd.rank()), lr=lr)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    expected = stepped_optimizer(kind, what_rank_did(0), lr=0.0123).state_dict()
    assert all(group["lr"] == 0.0123 for group in optimizer.param_groups)
    assert_state_equal(optimizer.state_dict(), copy.deepcopy(expected))


def test_broadcast_optimizer_state_of_fresh_optimizers():
    """No rank has stepped yet: the broadcast still makes the options and whatever state
    there is equal to rank 0's on every rank."""
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.5 if hvd.rank() == 0 else 0.001)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    everyone = gather_objects(optimizer.state_dict(), name="fresh.optimizer.state")
    assert optimizer.param_groups[0]["lr"] == 0.5
    for state in everyone:
        assert_state_equal(state, everyone[0])


# ---------------------------------------------------------------- sharding (ZeRO)

SHARDINGS = ("optimizer_state", "gradients")
DEFAULT_BUCKET_BYTES = 25 * 2**20
# The default holds the MLP in one bucket; 200 bytes cut it in two (its float64 parameters,
# from the last: 24 + 192 bytes, then 64 + 320).
BUCKET_BYTES = pytest.mark.parametrize("bucket_bytes", [DEFAULT_BUCKET_BYTES, 200], ids=["one_bucket", "200_bytes"])


def expected_buckets(parameters, bucket_bytes=DEFAULT_BUCKET_BYTES):
    """The documented cut: from the last parameter back, a new bucket once the current one
    holds bucket_bytes or more, or at another dtype or device; members in the order added."""
    buckets, filled = [], 0
    for p in reversed(parameters):
        kind = (buckets[-1][0].dtype, buckets[-1][0].device) if buckets else None
        if kind is None or filled >= bucket_bytes or (p.dtype, p.device) != kind:
            buckets.append([])
            filled = 0
        buckets[-1].append(p)
        filled += p.numel() * p.element_size()
    return buckets


def deal(buckets):
    """The documented deal, by parameter id: bucket by bucket, largest first, each to the rank
    owning the fewest elements so far, counting the buckets before (ties: the lowest rank;
    equal sizes in the bucket's order)."""
    loads, owners = [0] * hvd.size(), {}
    for bucket in buckets:
        for p in sorted(bucket, key=lambda q: -q.numel()):
            owner = loads.index(min(loads))
            owners[id(p)] = owner
            loads[owner] += p.numel()
    return owners


def expected_owners(parameters, bucket_bytes=DEFAULT_BUCKET_BYTES):
    owners = deal(expected_buckets(parameters, bucket_bytes))
    return [owners[id(p)] for p in parameters]


def owned(model, bucket_bytes=DEFAULT_BUCKET_BYTES):
    parameters = list(model.parameters())
    return [p for p, owner in zip(parameters, expected_owners(parameters, bucket_bytes)) if owner == hvd.rank()]


def state_elements(optimizer):
    return sum(v.numel() for state in optimizer.state.values() for v in state.values() if torch.is_tensor(v))


def assert_state_only_for(optimizer, parameters):
    held = {id(p) for p, state in optimizer.state.items() if state}
    assert held == {id(p) for p in parameters}, "optimizer state is held for parameters other ranks own"


def assert_state_dicts_close(actual, expected, tolerance=TOLERANCE):
    assert sorted(actual["state"]) == sorted(expected["state"])
    for index, state in expected["state"].items():
        for key, value in state.items():
            got = actual["state"][index][key]
            difference = (torch.as_tensor(got).double() - torch.as_tensor(value).double()).abs().max().item()
            assert difference <= tolerance, f"state[{index}][{key!r}] differs by {difference:.3g}"
    assert [{k: v for k, v in g.items() if k != "params"} for g in actual["param_groups"]] == \
        [{k: v for k, v in g.items() if k != "params"} for g in expected["param_groups"]]


@BUCKET_BYTES
@pytest.mark.parametrize("sharding", SHARDINGS)
@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_sharded_training_matches_unsharded(kind, sharding, bucket_bytes):
    """Each rank steps the parameters it owns and keeps state for them only; after 20 steps
    the parameters equal those of the unsharded DistributedOptimizer. Stage 1 keeps every
    reduced gradient, stage 2 only the owned ones."""
    data = make_data(STEPS * hvd.size())
    reference = make_model()
    unsharded = distributed(reference, OPTIMIZERS[kind](reference.parameters()))
    train_distributed(reference, unsharded, data)
    model = make_model()
    optimizer = distributed(model, OPTIMIZERS[kind](model.parameters()), sharding=sharding,
                            sharding_bucket_bytes=bucket_bytes)
    train_distributed(model, optimizer, data)

    assert_parameters_close(model, reference)
    assert_state_only_for(optimizer, owned(model, bucket_bytes))
    if hvd.size() > 1:
        assert len(optimizer.state) < len(unsharded.state)
        assert state_elements(optimizer) < state_elements(unsharded)
    mine = {id(p) for p in owned(model, bucket_bytes)}
    for p, q in zip(model.parameters(), reference.parameters()):
        if sharding == "gradients" and id(p) not in mine:
            assert p.grad is None, "stage 2 kept the gradient of a parameter another rank owns"
        else:
            assert (p.grad - q.grad).abs().max().item() <= TOLERANCE


class RecordingSGD(torch.optim.SGD):
    """SGD that notes which parameters had a gradient, so were stepped, in each step."""

    def step(self, closure=None):
        self.stepped = [p for group in self.param_groups for p in group["params"] if p.grad is not None]
        return super().step(closure)


@BUCKET_BYTES
@pytest.mark.parametrize("sharding", SHARDINGS)
def test_sharded_optimizer_steps_only_owned_parameters(sharding, bucket_bytes):
    """The wrapped optimizer sees the gradients of this rank's parameters only; stage 1 then
    gives the others theirs back."""
    data = make_data(hvd.size())
    model = make_model()
    optimizer = distributed(model, RecordingSGD(model.parameters(), lr=0.1, momentum=0.9), sharding=sharding,
                            sharding_bucket_bytes=bucket_bytes)
    train_distributed(model, optimizer, data, steps=1)
    assert [id(p) for p in optimizer.stepped] == [id(p) for p in owned(model, bucket_bytes)]
    with_gradient = [p for p in model.parameters() if p.grad is not None]
    expected = list(model.parameters()) if sharding == "optimizer_state" else owned(model, bucket_bytes)
    assert [id(p) for p in with_gradient] == [id(p) for p in expected]


class Scale(torch.nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, features, dtype=torch.float32))

    def forward(self, x):
        return x * self.weight.to(x.dtype)


class ManyBuckets(torch.nn.Module):
    """Float64 parameters of equal and of different sizes around a float32 one: with 200-byte
    buckets, three buckets (from the last parameter: a full one, the float32 parameter alone,
    then the rest, where two biases of equal size tie)."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(FEATURES, 4).double()
        self.second = torch.nn.Linear(4, 4).double()
        self.scale = Scale(4)
        self.third = torch.nn.Linear(4, 4).double()
        self.out = torch.nn.Linear(4, OUTPUTS).double()

    def forward(self, x):
        hidden = self.scale(torch.tanh(self.second(torch.tanh(self.first(x)))))
        return self.out(torch.tanh(self.third(hidden)))


def test_owners_are_dealt_bucket_by_bucket_with_the_load_carried():
    """Over several buckets, the parameters a rank steps are those the documented rule gives
    it, which (on 2 and 3 ranks) are not those of one greedy deal over the whole model."""
    bucket_bytes = 200
    model = ManyBuckets()
    parameters = list(model.parameters())
    assert [len(bucket) for bucket in expected_buckets(parameters, bucket_bytes)] == [4, 1, 4]
    optimizer = distributed(model, RecordingSGD(model.parameters(), lr=0.1), sharding="gradients",
                            sharding_bucket_bytes=bucket_bytes)
    train_distributed(model, optimizer, make_data(hvd.size()), steps=1)
    assert [id(p) for p in optimizer.stepped] == [id(p) for p in owned(model, bucket_bytes)]
    if hvd.size() in (2, 3):
        whole_model = deal([parameters])
        assert expected_owners(parameters, bucket_bytes) != [whole_model[id(p)] for p in parameters]


class RecordedReducescatters:
    """The names of the reducescatters the sharded optimizer starts, in order."""

    def __init__(self, monkeypatch):
        self.names = []
        start = zero.reducescatter_async

        def recording(tensor, name=None, **kwargs):
            self.names.append(name)
            return start(tensor, name=name, **kwargs)

        monkeypatch.setattr(zero, "reducescatter_async", recording)


def test_stage_2_reduces_each_bucket_once_backward_produced_its_gradients(monkeypatch):
    """With two backward passes per step, no bucket starts in the first pass and every bucket
    starts during the second, before synchronize(); synchronize() then starts none."""
    recorded = RecordedReducescatters(monkeypatch)
    data = make_data(2 * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1), sharding="gradients",
                            sharding_bucket_bytes=200, backward_passes_per_step=2)
    optimizer.zero_grad()
    for micro in range(2):
        x, y = batch(data, shard_index(0, hvd.rank(), micro, 2))
        F.mse_loss(model(x), y).backward()
        if micro == 0:
            assert recorded.names == []
    label = optimizer._sharding_label()
    buckets = [f"zero.gradients.{label}.0", f"zero.gradients.{label}.1"]
    assert sorted(recorded.names) == buckets
    with pytest.raises(AssertionError, match="still being reduced"):
        optimizer.zero_grad()
    optimizer.step()
    assert sorted(recorded.names) == buckets


@pytest.mark.parametrize("sharding", SHARDINGS)
@pytest.mark.parametrize("options", [dict(backward_passes_per_step=2), dict(gradient_predivide_factor=4.0),
                                     dict(op=hvd.Sum)], ids=["accumulation", "predivide", "sum"])
def test_sharded_training_with_options(options, sharding):
    """backward_passes_per_step, gradient_predivide_factor and op=Sum mean the same with sharding."""
    micro_batches = options.get("backward_passes_per_step", 1)
    steps = 5
    data = make_data(steps * micro_batches * hvd.size())
    reference = make_model()
    train_distributed(reference, distributed(reference, torch.optim.SGD(reference.parameters(), lr=0.05,
                                                                        momentum=0.9), **options),
                      data, steps=steps, micro_batches=micro_batches)
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), sharding=sharding,
                            **options)
    train_distributed(model, optimizer, data, steps=steps, micro_batches=micro_batches)
    assert_parameters_close(model, reference)


@BUCKET_BYTES
@pytest.mark.parametrize("sharding", SHARDINGS)
def test_sharded_parameter_without_gradient_on_some_ranks(sharding, bucket_bytes):
    """Only rank 0 uses head_b: the other ranks contribute zeros for it, as without sharding
    (with small buckets, rank 0 starts head_b's bucket in backward, the others in step())."""
    steps = 5
    data = make_data(steps * hvd.size())
    models = []
    for mode in (None, sharding):
        model = TwoHeads()
        optimizer = distributed(model, torch.optim.Adam(model.parameters(), lr=0.01), sharding=mode,
                                sharding_bucket_bytes=bucket_bytes)
        for step in range(steps):
            optimizer.zero_grad()
            x, y = batch(data, shard_index(step, hvd.rank()))
            F.mse_loss(model(x, use_head_b=hvd.rank() == 0), y).backward()
            optimizer.step()
        models.append(model)
    assert_parameters_close(models[1], models[0])


@BUCKET_BYTES
@pytest.mark.parametrize("sharding", SHARDINGS)
def test_sharded_training_follows_a_layer_frozen_and_unfrozen(sharding, bucket_bytes):
    """Freezing moves no parameter to another owner, and a frozen parameter whose gradient was
    zeroed (not set to None) is still moved by Adam's momentum on its owner and reaches every
    rank, as without sharding (with small buckets, the frozen layer is a bucket of its own)."""
    steps = 12
    data = make_data(steps * hvd.size())
    models = []
    for mode in (None, sharding):
        model = make_model()
        optimizer = distributed(model, torch.optim.Adam(model.parameters(), lr=0.01), sharding=mode,
                                sharding_bucket_bytes=bucket_bytes)
        for step in range(steps):
            if step in (4, 8):
                model[0].requires_grad_(step == 8)
            optimizer.zero_grad(set_to_none=False)
            x, y = batch(data, shard_index(step, hvd.rank()))
            F.mse_loss(model(x), y).backward()
            optimizer.step()
        models.append(model)
    assert_parameters_close(models[1], models[0])


class TwoDtypes(torch.nn.Module):
    """The float64 MLP and a float32 output scale: two flat buffers, and (with the owners'
    rule) ranks that own no float32 parameter at all."""

    def __init__(self):
        super().__init__()
        self.body = make_model()
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, OUTPUTS, dtype=torch.float32))

    def forward(self, x):
        return self.body(x) * self.scale.double()


@pytest.mark.parametrize("sharding", SHARDINGS)
def test_sharded_parameters_of_two_dtypes(sharding):
    """Each dtype travels in its own buffer, also where a rank owns none of its parameters."""
    steps = 5
    data = make_data(steps * hvd.size())
    models = []
    for mode in (None, sharding):
        model = TwoDtypes()
        train_distributed(model, distributed(model, torch.optim.Adam(model.parameters(), lr=0.01), sharding=mode),
                          data, steps=steps)
        models.append(model)
    reference, model = models
    assert model.scale.dtype == torch.float32
    assert (model.scale - reference.scale).abs().max().item() <= 1e-6
    assert_parameters_close(model.body, reference.body)


@pytest.mark.parametrize("sharding", SHARDINGS)
def test_consolidated_state_dict_resumes_like_the_unsharded_optimizer(sharding):
    """consolidate_state_dict(to) makes rank to's state_dict() the unsharded one; saved to a
    file, it loads into a fresh sharded and a fresh unsharded optimizer, whose next 5 steps
    both equal 5 more steps of the unsharded optimizer that never stopped."""
    first, more, root = 10, 5, hvd.size() - 1
    data = make_data((first + more) * hvd.size())
    straight = make_model()
    unsharded = distributed(straight, torch.optim.Adam(straight.parameters(), lr=0.01))
    train_distributed(straight, unsharded, data, steps=first)
    expected = copy.deepcopy(unsharded.state_dict())
    train_distributed(straight, unsharded, data, steps=more, first=first)

    model = make_model()
    optimizer = distributed(model, torch.optim.Adam(model.parameters(), lr=0.01), sharding=sharding)
    train_distributed(model, optimizer, data, steps=first)
    optimizer.consolidate_state_dict(to=root)
    with shared_directory("zero.checkpoint") as directory:
        path = os.path.join(directory, "checkpoint.pt")
        if hvd.rank() == root:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
        hvd.barrier()
        checkpoint = torch.load(path)
    assert_state_dicts_close(checkpoint["optimizer"], expected)
    resumed = []
    for mode in (sharding, None):
        fresh = make_model()
        fresh.load_state_dict(checkpoint["model"])
        fresh_optimizer = distributed(fresh, torch.optim.Adam(fresh.parameters(), lr=0.01), sharding=mode)
        # A copy each: torch 2.x's load_state_dict adopts the dict's tensors (no deep copy, as
        # 1.x made), so two optimizers loading one dict would step each other's state.
        fresh_optimizer.load_state_dict(copy.deepcopy(checkpoint["optimizer"]))
        train_distributed(fresh, fresh_optimizer, data, steps=more, first=first)
        resumed.append((fresh, fresh_optimizer))

    if hvd.rank() != root:
        assert_state_only_for(optimizer, owned(model))
    assert_parameters_close(resumed[0][0], straight)
    assert_parameters_close(resumed[1][0], straight)
    assert_state_only_for(resumed[0][1], owned(resumed[0][0]))


@pytest.mark.parametrize("sharding", SHARDINGS)
def test_checkpoint_of_a_world_of_one_loads_into_a_sharded_optimizer(sharding):
    """A plain optimizer's state dict (a world of one trained on the concatenated batches)
    loads on every rank of this world; the sharded optimizer then steps like the unsharded."""
    first, more = 10, 5
    data = make_data((first + more) * hvd.size())
    alone = make_model()
    plain = torch.optim.SGD(alone.parameters(), lr=0.1, momentum=0.9)
    train_reference(alone, plain, data, steps=first)
    models = []
    for mode in (None, sharding):
        model = make_model()
        model.load_state_dict(alone.state_dict())
        optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), sharding=mode)
        optimizer.load_state_dict(copy.deepcopy(plain.state_dict()))  # adopted, not copied, by torch 2.x
        train_distributed(model, optimizer, data, steps=more, first=first)
        models.append(model)
    assert_parameters_close(models[1], models[0])


def test_sharding_argument_checks():
    """An unknown mode, compression, groups or an op reducescatter lacks with stage 2, a bucket
    size that is not positive, and a consolidation to a rank that does not exist are refused."""
    model = make_model()

    def sgd():
        return torch.optim.SGD(model.parameters(), lr=0.1)

    with pytest.raises(ValueError, match="'zero3'.*'optimizer_state', 'gradients'"):
        distributed(model, sgd(), sharding="zero3")
    with pytest.raises(ValueError, match="compression is not supported"):
        distributed(model, sgd(), sharding="gradients", compression=hvd.Compression.fp16)
    with pytest.raises(ValueError, match="op=hvd.Average or hvd.Sum"):
        distributed(model, sgd(), sharding="gradients", op=hvd.Max)
    with pytest.raises(ValueError, match="groups do not apply with sharding='gradients'"):
        distributed(model, sgd(), sharding="gradients", groups=2)
    for bucket_bytes in (0, -1):
        with pytest.raises(ValueError, match=f"sharding_bucket_bytes must be positive, got {bucket_bytes}"):
            distributed(model, sgd(), sharding="gradients", sharding_bucket_bytes=bucket_bytes)
    sharded = distributed(model, sgd(), sharding="optimizer_state", compression=hvd.Compression.fp16)
    with pytest.raises(ValueError, match="is not a rank"):
        sharded.consolidate_state_dict(to=hvd.size())


# Last: ranks run different numbers of operations here, which would shift the numbering of
# later unnamed operations in Horovod.


def test_join_with_uneven_batches():
    """Rank 1 has one batch fewer and calls hvd.join() when done; the others' last step still
    completes, with zeros standing in for rank 1's gradient (still divided by size()).
    join() returns the rank that joined last, the same everywhere and not rank 1."""
    if hvd.size() < 2:
        pytest.skip("needs at least two ranks")
    short_rank, steps = 1, 6

    def steps_of(r):
        return steps - 1 if r == short_rank else steps

    data = make_data(steps * hvd.size())
    model = make_model()
    optimizer = distributed(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    train_distributed(model, optimizer, data, steps=steps_of(hvd.rank()))
    last = hvd.join()
    everyone = gather_objects(last, name="optimizer.join.last")

    reference = make_model()
    plain = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(steps_of(hvd.rank())):
        plain.zero_grad()
        working = [r for r in range(hvd.size()) if steps_of(r) > step]
        reference_gradients(reference, data, step, 1.0 / hvd.size(), ranks=working)
        plain.step()
    assert everyone == [last] * hvd.size()
    assert last != short_rank
    assert_parameters_close(model, reference)
