"""bench/maskrcnn/log_windows.py: which windows count and what a step's CPU comes to."""

import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench" / "maskrcnn"))

from log_windows import summarize  # noqa: E402


def log(step: int, rate: float) -> str:
    return f"[0]<stdout>:iter: {step}/200  loss: 1.234  images/s: {rate}  lr: 0.02\n"


def test_counts_the_windows_after_the_first_and_the_cpu_over_them():
    lines = [
        "[1]<stdout>:iter: 20/200  images/s: 99.0\n",  # another rank's line
        log(20, 1.0),  # the warm-up window: not in the rate
        "some other output\n",
        log(40, 10.0),
        log(60, 14.0),
    ]
    seconds = iter([5.0, 6.0, 9.0])  # read at steps 20, 40, 60
    # (user, system, idle) ticks, 100 a second: over the 40 steps 800, 200 and 400 ticks.
    ticks = iter([(1000, 100, 50), (1400, 200, 250), (1800, 300, 450)])
    line = summarize(lines, clock=lambda: next(seconds), ticks=lambda: next(ticks), ticks_per_s=100)
    # mean rate 12; wall 4 s / 40 steps = 100 ms; 8 s user / 40 = 200 ms, 2 s / 40, 4 s / 40.
    assert line == "12.00 100.0 200.0 50.0 100.0"


def test_a_run_without_a_window_after_the_first_reads_nan():
    counter = itertools.count()
    clock = lambda: float(next(counter))  # noqa: E731
    ticks = lambda: (0, 0, 0)  # noqa: E731
    assert summarize([log(20, 5.0)], clock=clock, ticks=ticks) == "nan nan nan nan nan"
    assert summarize([log(40, 5.0)], clock=clock, ticks=ticks) == "nan nan nan nan nan"  # no start
    assert summarize([], clock=clock, ticks=ticks) == "nan nan nan nan nan"
