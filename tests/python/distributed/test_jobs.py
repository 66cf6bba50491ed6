"""torch.distributed jobs over "dtrain" started as PyTorch users start them, without dtrain's
launcher: the variables torchrun gives its workers, set by hand, ``tcp://`` and a ``store=``; a
dead peer and a stalled one end the survivors' collectives with RuntimeError. Each test starts
its own ranks. (torchrun itself starts the examples: tests/python/examples.)"""
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).resolve().parent / "rank_worker.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ranks(size, args, tmp_path):
    """``size`` ranks with torchrun's variables; returns (exit codes, outputs)."""
    port = free_port()
    processes = []
    for rank in range(size):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(size), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(size), OMP_NUM_THREADS="1")
        for name in ("DTRAIN_SIZE", "DTRAIN_RANK"):
            env.pop(name, None)
        log = (tmp_path / f"rank{rank}.log").open("w")
        processes.append(subprocess.Popen(["timeout", "-k", "5", "120", sys.executable, str(WORKER), *args],
                                          stdout=log, stderr=subprocess.STDOUT, env=env))
    codes = [p.wait(timeout=150) for p in processes]
    outputs = [(tmp_path / f"rank{rank}.log").read_text() for rank in range(size)]
    return codes, outputs


@pytest.mark.parametrize("how", ["env", "tcp", "file"])
def test_ddp_job_started_without_dtrain_run(tmp_path, how):
    codes, outputs = start_ranks(3 if how == "env" else 2, ["--init", how, "--store", str(tmp_path / "store")],
                                 tmp_path)
    assert codes == [0] * len(codes), "\n".join(outputs)
    for rank, output in enumerate(outputs):
        assert f"rank {rank}: trained" in output, output


@pytest.mark.parametrize("backend", ["dtrain", "cpu:dtrain,cuda:gloo"])
def test_the_backend_serves_cpu_tensors_alone_or_beside_a_cuda_backend(tmp_path, backend):
    codes, outputs = start_ranks(2, ["--backend", backend], tmp_path)
    assert codes == [0, 0], "\n".join(outputs)
    for rank, output in enumerate(outputs):
        assert f"rank {rank}: CPU tensors go to backend dtrain" in output, output
        assert f"rank {rank}: trained" in output, output


def test_a_dead_peer_fails_the_survivors_collective_naming_it(tmp_path):
    codes, outputs = start_ranks(2, ["--then", "die", "--timeout-s", "30"], tmp_path)
    assert codes[1] == 3, outputs[1]
    assert codes[0] == 0, outputs[0]
    assert "rank 0: raised RuntimeError" in outputs[0] and "rank 1" in outputs[0], outputs[0]


def test_a_stalled_peer_fails_the_collective_after_the_timeout(tmp_path):
    codes, outputs = start_ranks(2, ["--then", "stall", "--timeout-s", "3"], tmp_path)
    assert codes[0] == 0, outputs[0]
    assert "rank 0: raised RuntimeError" in outputs[0], outputs[0]
