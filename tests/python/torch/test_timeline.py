"""``hvd.start_timeline`` / ``hvd.stop_timeline``: a Chrome-trace JSON file, written by rank 0.

In Horovod every rank may call both; only the coordinator (rank 0) opens the file
(horovod_start_timeline in horovod/common/operations.cc). After stop_timeline() the file
is complete JSON. (Horovod also wants HOROVOD_TIMELINE=DYNAMIC in the environment first;
dtrain does not.)
"""
import json
import os

import torch

import dtrain.torch as hvd
from multirank import shared_directory


def record(directory, stem, names, mark_cycles=False):
    """Every rank starts a timeline at its own path, runs allreduces named `names`, stops;
    returns which ranks' files exist and rank 0's text (read before the directory goes)."""
    path = os.path.join(directory, f"{stem}.{hvd.rank()}.json")
    hvd.start_timeline(path, mark_cycles=mark_cycles)
    for name in names:
        hvd.allreduce(torch.ones(3), name=name)
    hvd.stop_timeline()
    hvd.barrier()
    exists = [os.path.exists(os.path.join(directory, f"{stem}.{r}.json")) for r in range(hvd.size())]
    text = None
    if exists[0]:
        with open(os.path.join(directory, f"{stem}.0.json")) as f:
            text = f.read()
    return exists, text


def assert_trace(text):
    parsed = json.loads(text)
    events = parsed["traceEvents"] if isinstance(parsed, dict) else parsed
    assert isinstance(events, list) and events, "no events"


def test_rank_zero_writes_valid_json_naming_the_operations():
    with shared_directory("timeline.basic") as directory:
        exists, text = record(directory, "basic", ["timeline.probe"])
    assert exists[0], "rank 0 wrote no timeline"
    assert not any(exists[1:]), f"other ranks wrote timelines too: {exists}"
    if hvd.rank() == 0:
        assert_trace(text)
        assert "timeline.probe" in text


def test_mark_cycles_adds_cycle_markers():
    with shared_directory("timeline.cycles") as directory:
        exists, text = record(directory, "cycles", ["timeline.cycle.probe"], mark_cycles=True)
    assert exists[0]
    if hvd.rank() == 0:
        assert_trace(text)
        assert "CYCLE_START" in text


def test_a_second_timeline_after_the_first():
    """Timelines can be started again, into a new file, after a stop."""
    with shared_directory("timeline.again") as directory:
        first = record(directory, "first", ["timeline.first"])
        second = record(directory, "second", ["timeline.second"])
    assert first[0][0] and second[0][0]
    if hvd.rank() == 0:
        assert_trace(first[1])
        assert_trace(second[1])
        assert "timeline.first" in first[1]
        assert "timeline.second" in second[1]


def test_stopping_without_a_timeline_is_harmless():
    hvd.stop_timeline()
    hvd.stop_timeline()
    result = hvd.allreduce(torch.ones(2), op=hvd.Sum, name="timeline.after.stop")
    assert torch.equal(result, torch.full((2,), float(hvd.size())))
