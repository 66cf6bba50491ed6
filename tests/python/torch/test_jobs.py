"""Python jobs as users run them under ``dtrain run``: an elastic job that loses a worker
mid-run goes on with every step counted once, and a rank killed in an ordinary job ends it
naming the rank, and a hung job ends with the flight recorder's verdict; a sharded optimizer's
checkpoint saved by 3 ranks resumes on 2. Each test starts its own launcher (run this file in
one process)."""
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
LAUNCHER = os.environ.get("DTRAIN_CLI", str(HERE.parents[2] / "build" / "apps" / "dtrain"))
WORKER = HERE / "elastic_worker.py"
SHARDED_WORKER = HERE / "sharded_checkpoint_worker.py"
STEPS, COMMIT_EVERY = 60, 5


class Job:
    """One ``dtrain run`` in the background, its output in a file read as it grows."""

    def __init__(self, tmp_path: Path, launcher_args, timeout_s: str = "10", worker_args=()) -> None:
        self.log = tmp_path / "job.log"
        self.tag = f"python-job-test-{uuid.uuid4().hex}"
        env = dict(os.environ, DTRAIN_TIMEOUT_S=timeout_s)
        command = ["timeout", "-k", "5", "150", LAUNCHER, "run", *launcher_args, "--", sys.executable, str(WORKER),
                   "--steps", str(STEPS), "--commit-every", str(COMMIT_EVERY), "--tag", self.tag, *worker_args]
        self.process = subprocess.Popen(command, stdout=self.log.open("w"), stderr=subprocess.STDOUT, env=env)

    def output(self) -> str:
        return self.log.read_text()

    def wait_for(self, pattern: str) -> re.Match:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            match = re.search(pattern, self.output())
            if match:
                return match
            time.sleep(0.05)
        pytest.fail(f"no {pattern!r} in the output:\n{self.output()}")

    def kill_worker_mid_run(self, worker: int) -> None:
        pid = int(self.wait_for(rf"worker {worker} pid (\d+)").group(1))
        self.wait_for(r"rank \d+/\d+ step 12\n")
        os.kill(pid, signal.SIGKILL)

    def wait(self) -> int:
        return self.process.wait(timeout=160)

    def survivors(self) -> str:
        found = subprocess.run(["pgrep", "-af", "--", self.tag], capture_output=True, text=True).stdout
        return "\n".join(line for line in found.splitlines() if "pgrep" not in line)


def test_elastic_job_losing_a_worker_counts_every_step_once(tmp_path):
    job = Job(tmp_path, ["--min-np", "2", "--max-np", "3", "-H", "127.0.0.1:1,127.0.0.2:1,127.0.0.3:1"])
    job.kill_worker_mid_run(1)
    assert job.wait() == 0, job.output()
    out = job.output()
    assert "host 127.0.0.2: worker 1 was killed by signal 9 (SIGKILL); the job goes on without it" in out, out
    resumed = int(re.search(r"reset: \d+ -> 2 ranks, resuming at step (\d+)", out).group(1))
    done = re.search(r"done: steps (\d+) total (\d+) resets (\d+)", out)
    assert done, out
    steps, total, resets = map(int, done.groups())
    assert steps == STEPS and resets == 1, out
    # 3 ranks counted each step before the reset's commit, 2 after: no step lost or counted twice.
    assert total == 3 * resumed + 2 * (STEPS - resumed), out
    # The survivors went back to a commit made after the first 12 steps (killed at step 12 or later).
    assert resumed % COMMIT_EVERY == 0 and resumed >= 10, out
    assert job.survivors() == ""


def test_elastic_job_takes_in_a_discovered_host_at_a_commit(tmp_path):
    """A host the discovery script starts to list joins at the next commit: commit() raises
    HostsUpdatedInterrupt on every rank, elastic.run forms a world of 3 without restoring, and
    every step is counted once. The ranks wait at step 7 until the new worker is known to the
    launcher, so a fast world cannot finish before the host joins."""
    hosts, script, gate = tmp_path / "hosts", tmp_path / "discover.sh", tmp_path / "go"
    hosts.write_text("127.0.0.1\n127.0.0.2\n")
    script.write_text(f"#!/bin/sh\ncat '{hosts}'\n")
    script.chmod(0o700)
    job = Job(tmp_path, ["--min-np", "2", "--max-np", "3", "--host-discovery-script", str(script)],
              worker_args=["--hold-at-step", "7", "--hold-file", str(gate)])
    job.wait_for(r"rank \d+/2 step 5\n")
    with hosts.open("a") as f:
        f.write("127.0.0.3:1\n")
    job.wait_for(r"1 new worker waits to join at the next commit")
    gate.touch()
    assert job.wait() == 0, job.output()
    out = job.output()
    joined = int(re.search(r"reset: \d+ -> 3 ranks, resuming at step (\d+)", out).group(1))
    assert joined % COMMIT_EVERY == 0, out
    done = re.search(r"done: steps (\d+) total (\d+) resets (\d+)", out)
    assert done, out
    steps, total, resets = map(int, done.groups())
    assert steps == STEPS and resets == 1, out
    assert total == 2 * joined + 3 * (STEPS - joined), out
    assert job.survivors() == ""


def test_rank_killed_in_an_ordinary_job_ends_it_naming_the_rank(tmp_path):
    job = Job(tmp_path, ["-np", "2"], timeout_s="5")
    pid = None
    deadline = time.monotonic() + 90
    while pid is None and time.monotonic() < deadline:
        pid = _rank_pid(job, 1)
        time.sleep(0.05)
    assert pid is not None, job.output()
    job.wait_for(r"rank \d+/\d+ step 12\n")
    os.kill(pid, signal.SIGKILL)
    code = job.wait()
    out = job.output()
    assert code != 0 and code != 124, out
    assert re.search(r"rank 1 \(host [^)]*\) was killed by signal 9", out), out
    assert job.survivors() == ""


def _rank_pid(job: Job, rank: int):
    """The pid of the job's rank ``rank``, found through the variables the launcher gave it."""
    found = subprocess.run(["pgrep", "-f", "--", job.tag], capture_output=True, text=True).stdout.split()
    for pid in found:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"DTRAIN_RANK={rank}".encode() in environ and b"DTRAIN_SIZE=2" in environ:
            return int(pid)
    return None


HANGING_SCRIPT = """
import time
import torch
import dtrain.torch as hvd

hvd.init()
hvd.allreduce(torch.ones(2), name="step.a")
if hvd.rank() == 0:
    hvd.allreduce(torch.ones(2), name="step.b")
else:
    time.sleep(600)  # stuck in its own code
"""


def test_hung_python_job_ends_with_a_verdict_naming_the_rank(tmp_path):
    """Rank 1 stays in its own code while rank 0 waits on an allreduce: the stall shutdown ends
    the job and dtrain run prints the flight recorder's verdict from both ranks' records."""
    script = tmp_path / "hang.py"
    script.write_text(HANGING_SCRIPT)
    done = subprocess.run(["timeout", "-k", "5", "120", LAUNCHER, "run", "-np", "2", "--stall-shutdown-s", "2", "--",
                           sys.executable, str(script)], capture_output=True, text=True, timeout=150)
    out = done.stdout + done.stderr
    assert done.returncode not in (0, 124), out
    verdict = re.search(r"dtrain run: Flight records of 2 of 2 ranks.*", out)
    assert verdict, out
    assert re.search(r"Allreduce '[^']*step\.b' is awaited by rank 0 \(for up to [0-9.]+ s\) and was never "
                     r"submitted by rank 1", verdict.group(0)), out
    assert re.search(r"Rank 1 has nothing in flight: its last collective, allreduce '[^']*step\.a'", verdict.group(0)), out
    assert "Look at rank 1 first." in verdict.group(0), out
    assert "dtrain flight record: " not in out, "the records are the launcher's, not the user's"


@pytest.mark.parametrize("sharding", ["optimizer_state", "gradients"])
def test_sharded_checkpoint_of_3_ranks_resumes_on_2(tmp_path, sharding):
    """consolidate_state_dict() on 3 ranks writes the whole optimizer state; a 2-rank job loads
    it into a sharded optimizer, which then steps like an unsharded one loaded from the same
    file and keeps state for its own parameters only."""
    checkpoint = tmp_path / "checkpoint.pt"
    outputs = []
    for np, phase in (("3", "save"), ("2", "resume")):
        done = subprocess.run(["timeout", "-k", "5", "120", LAUNCHER, "run", "-np", np, "--stall-shutdown-s", "30",
                               "--", sys.executable, str(SHARDED_WORKER), "--phase", phase, "--checkpoint",
                               str(checkpoint), "--sharding", sharding],
                              capture_output=True, text=True, timeout=150)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == 0, outputs[-1]
    reports = re.findall(r"rank (\d)/2: difference (\S+), state entries (\d+) of (\d+)", outputs[1])
    assert sorted(r[0] for r in reports) == ["0", "1"], outputs[1]
    for _, difference, held, total in reports:
        assert float(difference) <= 1e-9, outputs[1]
        assert 0 < int(held) < int(total), outputs[1]
