"""An elastic training loop in Horovod's shape for the elastic job tests: each step allreduces
1 (so the running total counts the ranks of every step) and commits every few steps. The count
goes through a process set of every rank, added each time a world starts training (a world's
sets end with it). Lines the tests read:

    worker W pid P                                     at start (stderr)
    rank R/S step N                                    every step
    reset: S1 -> S2 ranks, resuming at step A          after each change of the world
    done: steps N total T resets R                     at the end, rank 0
"""
import argparse
import os
import sys
import time

import torch

import dtrain.torch as hvd


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--commit-every", type=int, default=5)
    parser.add_argument("--step-ms", type=int, default=40)
    parser.add_argument("--tag", default="")  # lets the test find this job's processes
    # Every rank waits before this step until --hold-file exists (a test's gate: the world
    # must still be training when something it waits for has happened).
    parser.add_argument("--hold-at-step", type=int, default=-1)
    parser.add_argument("--hold-file", default="")
    args = parser.parse_args()
    print(f"worker {os.environ.get('DTRAIN_ELASTIC_WORKER', '-')} pid {os.getpid()}", file=sys.stderr, flush=True)

    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    state = hvd.elastic.TorchState(model, optimizer, step=0, total=0.0, resets=0)
    sizes = {"last": None}

    def on_reset() -> None:
        state.resets += 1
        print(f"reset: {sizes['last']} -> {hvd.size()} ranks, resuming at step {state.step}", flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state: hvd.elastic.TorchState) -> None:
        everyone = hvd.add_process_set(range(hvd.size()))
        while state.step < args.steps:
            while state.step == args.hold_at_step and not os.path.exists(args.hold_file):
                time.sleep(0.02)
            sizes["last"] = hvd.size()
            count = hvd.allreduce(torch.ones(1), name="elastic_worker.count", op=hvd.Sum, process_set=everyone)
            state.total += count.item()
            print(f"rank {hvd.rank()}/{hvd.size()} step {state.step}", flush=True)
            time.sleep(args.step_ms / 1000)
            state.step += 1
            if state.step % args.commit_every == 0:
                state.commit()
        hvd.remove_process_set(everyone)

    train(state)
    if hvd.rank() == 0:
        print(f"done: steps {state.step} total {state.total:.0f} resets {state.resets}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
