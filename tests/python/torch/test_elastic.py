"""``hvd.elastic.TorchState`` and ``hvd.elastic.run`` on a plain (non-elastic) job.

Horovod's semantics (horovod/torch/elastic/state.py, horovod/common/elastic.py): the
state's model, optimizer and keyword attributes are saved at construction and by
``save()``/``commit()``; ``restore()`` brings back what was saved; ``sync()`` gives every
rank rank 0's model, optimizer state and saved attributes; ``run(func)(state, ...)`` syncs
the state, then calls ``func`` once when no worker comes or goes.
"""
import copy

import torch
import torch.nn.functional as F

import dtrain.torch as hvd
from multirank import assert_state_equal, every_rank, gather_objects, generator


def make_model(seed):
    model = torch.nn.Linear(4, 2).double()
    g = generator(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64))
    return model


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def data(seed, rows=3):
    g = generator(seed)
    return (torch.randn(rows, 4, generator=g, dtype=torch.float64),
            torch.randn(rows, 2, generator=g, dtype=torch.float64))


def take_step(model, optimizer, seed):
    """One local step of plain PyTorch (no communication)."""
    optimizer.zero_grad()
    x, y = data(seed)
    F.mse_loss(model(x), y).backward()
    optimizer.step()


def test_state_exposes_its_objects_as_attributes():
    model = make_model(1)
    optimizer = make_optimizer(model)
    state = hvd.elastic.TorchState(model, optimizer, batch=0, epoch=0)
    assert state.model is model and state.optimizer is optimizer
    assert state.batch == 0 and state.epoch == 0


def test_restore_brings_back_what_construction_saved():
    model = make_model(2)
    optimizer = make_optimizer(model)
    take_step(model, optimizer, seed=3)
    saved_model = copy.deepcopy(model.state_dict())
    saved_optimizer = copy.deepcopy(optimizer.state_dict())
    state = hvd.elastic.TorchState(model, optimizer, batch=0, epoch=0)

    take_step(model, optimizer, seed=4)
    state.batch, state.epoch = 5, 2
    state.restore()
    assert (state.batch, state.epoch) == (0, 0)
    assert state.model is model
    assert_state_equal(model.state_dict(), saved_model)
    assert_state_equal(optimizer.state_dict(), saved_optimizer)


def test_save_and_commit_move_the_restore_point():
    """save() (local) and commit() (save, then a check for joining workers on every rank)
    both make the current values what restore() returns to."""
    model = make_model(5)
    optimizer = make_optimizer(model)
    state = hvd.elastic.TorchState(model, optimizer, batch=0, epoch=0)

    take_step(model, optimizer, seed=6)
    state.batch = 3
    state.save()
    saved = copy.deepcopy((model.state_dict(), optimizer.state_dict()))
    take_step(model, optimizer, seed=7)
    state.batch = 4
    state.restore()
    after_save = (state.batch, copy.deepcopy((model.state_dict(), optimizer.state_dict())))

    take_step(model, optimizer, seed=8)
    state.epoch = 1
    state.commit()
    committed = copy.deepcopy((model.state_dict(), optimizer.state_dict()))
    take_step(model, optimizer, seed=9)
    state.epoch = 2
    state.restore()

    assert after_save[0] == 3
    assert_state_equal(after_save[1], saved)
    assert (state.batch, state.epoch) == (3, 1)
    assert_state_equal((model.state_dict(), optimizer.state_dict()), committed)


def test_sync_gives_every_rank_rank_zeros_state():
    """Model weights, optimizer state and attributes all become rank 0's."""
    model = make_model(10 + hvd.rank())
    optimizer = make_optimizer(model)
    take_step(model, optimizer, seed=20 + hvd.rank())
    state = hvd.elastic.TorchState(model, optimizer, batch=hvd.rank(), epoch=100 + hvd.rank())
    state.sync()

    rank0_model = make_model(10)
    rank0_optimizer = make_optimizer(rank0_model)
    take_step(rank0_model, rank0_optimizer, seed=20)
    assert (state.batch, state.epoch) == (0, 100)
    assert_state_equal(model.state_dict(), rank0_model.state_dict())
    assert_state_equal(optimizer.state_dict(), rank0_optimizer.state_dict())


def test_run_syncs_then_trains_once():
    """The decorated function runs once per rank, starting from rank 0's state; a
    DistributedOptimizer step inside it averages the ranks' gradients; its return value
    comes back."""
    model = make_model(30 + hvd.rank())
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model, optimizer, batch=hvd.rank() + 1, epoch=0)
    calls = []

    @hvd.elastic.run
    def train(state, increment):
        calls.append(state.batch)
        state.optimizer.zero_grad()
        x, y = data(40 + hvd.rank())
        F.mse_loss(state.model(x), y).backward()
        state.optimizer.step()
        state.batch += increment
        state.commit()
        return state.batch * 10

    result = train(state, 2)
    everyone = gather_objects(copy.deepcopy(model.state_dict()), name="elastic.run.model")

    reference = make_model(30)
    plain = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in every_rank(lambda r: data(40 + r)):
        (F.mse_loss(reference(x), y) / hvd.size()).backward()
    plain.step()
    assert calls == [1]
    assert result == 30 and state.batch == 3
    for weights in everyone:
        for key, value in weights.items():
            torch.testing.assert_close(value, reference.state_dict()[key], rtol=1e-12, atol=1e-12)


def test_reset_callbacks_wait_for_a_reset():
    """Callbacks registered for resets are not called when no worker comes or goes."""
    model = make_model(50)
    state = hvd.elastic.TorchState(model, make_optimizer(model), batch=0)
    called = []
    state.register_reset_callbacks([lambda: called.append("reset")])

    @hvd.elastic.run
    def train(state):
        return "trained"

    assert train(state) == "trained"
    assert called == []


def test_elastic_sampler_deals_out_what_remains_of_the_epoch():
    """Every sample once across the ranks; after a recorded step the rest of the epoch is dealt
    out again without the consumed samples; state_dict() restores the position elsewhere."""
    dataset = list(range(23))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=5)
    sampler.set_epoch(2)
    shares = hvd.allgather_object(list(sampler), name="sampler.shares")
    assert all(len(share) == len(shares[0]) for share in shares)
    dealt = [i for share in shares for i in share]
    assert set(dealt) == set(dataset)  # all of them; the padding repeats only to even the shares
    sampler.record_batch(0, 3)
    consumed = {i for share in shares for i in share[:3]}
    sampler.reset()
    rest = hvd.allgather_object(list(sampler), name="sampler.rest")
    assert set(i for share in rest for i in share) == set(dataset) - consumed
    moved = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=5)
    moved.load_state_dict(sampler.state_dict())
    assert list(moved) == list(sampler) and moved.epoch == 2
