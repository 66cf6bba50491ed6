"""A sharded optimizer's checkpoint moving between world sizes, for test_jobs.py.

``--phase save``: 10 steps of Adam under DistributedOptimizer(sharding=...), then
consolidate_state_dict(0); rank 0 saves the model and the whole optimizer state.
``--phase resume``: every rank loads that file into a fresh sharded optimizer and a fresh
unsharded one and takes 5 more steps with each. Each rank prints

    rank R/S: difference D, state entries E of P

(D: the largest difference between the two resumed models; E: the parameters whose optimizer
state the sharded one holds, P: all of them).
"""
import argparse
import copy

import torch
import torch.nn.functional as F

import dtrain.torch as hvd

FIRST, MORE, BATCH = 10, 5, 4


def make_model() -> torch.nn.Module:
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
    g = torch.Generator().manual_seed(2024)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(0.5 * torch.randn(p.shape, generator=g, dtype=torch.float64))
    return model


def train(model, optimizer, first: int, steps: int) -> None:
    """Each rank its own batch of a fixed dataset: step s, rank r takes batch s * size + r."""
    g = torch.Generator().manual_seed(31337)
    rows = (FIRST + MORE) * hvd.size() * BATCH
    x = torch.randn(rows, 5, generator=g, dtype=torch.float64)
    y = torch.randn(rows, 3, generator=g, dtype=torch.float64)
    for step in range(first, first + steps):
        start = (step * hvd.size() + hvd.rank()) * BATCH
        optimizer.zero_grad()
        F.mse_loss(model(x[start:start + BATCH]), y[start:start + BATCH]).backward()
        optimizer.step()


def wrapped(model, sharding):
    return hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                    named_parameters=model.named_parameters(), sharding=sharding)


def save(path: str, sharding: str) -> None:
    model = make_model()
    optimizer = wrapped(model, sharding)
    train(model, optimizer, 0, FIRST)
    optimizer.consolidate_state_dict(to=0)
    if hvd.rank() == 0:
        saved = optimizer.state_dict()
        # Consolidated: every parameter's state, from whichever rank owned it.
        assert len(saved["state"]) == len(list(model.parameters())), sorted(saved["state"])
        torch.save({"model": model.state_dict(), "optimizer": saved}, path)


def resume(path: str, sharding: str) -> None:
    checkpoint = torch.load(path)
    resumed = []
    for mode in (sharding, None):
        model = make_model()
        model.load_state_dict(checkpoint["model"])
        optimizer = wrapped(model, mode)
        # A copy each: torch 2.x's load_state_dict adopts the dict's tensors (1.x copied them), so
        # two optimizers loading one dict would step each other's state.
        optimizer.load_state_dict(copy.deepcopy(checkpoint["optimizer"]))
        train(model, optimizer, FIRST, MORE)
        resumed.append((model, optimizer))
    (sharded, sharded_optimizer), (plain, _) = resumed
    difference = max((p - q).abs().max().item() for p, q in zip(sharded.parameters(), plain.parameters()))
    held = sum(1 for state in sharded_optimizer.state.values() if state)
    total = len(list(sharded.parameters()))
    print(f"rank {hvd.rank()}/{hvd.size()}: difference {difference:.3g}, state entries {held} of {total}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--phase", choices=("save", "resume"), required=True)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--sharding", choices=("optimizer_state", "gradients"), required=True)
    args = parser.parse_args()
    hvd.init()
    (save if args.phase == "save" else resume)(args.checkpoint, args.sharding)
    hvd.barrier()
    hvd.shutdown()


if __name__ == "__main__":
    main()
