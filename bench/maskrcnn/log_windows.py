#!/usr/bin/env python3
"""Reads a training job's output on stdin and prints its rate and the machine's CPU per step.

Of rank 0's log lines ``iter: N/... images/s: R`` the windows after the first count (the
first holds the warm-up). Prints one line::

    images_per_s wall_ms user_ms system_ms idle_ms

``images_per_s`` is the mean of those windows' rates. The others are per step over the same
span, from the line that ends the first window to the last line: its wall time, and how the
machine's cores spent it, summed over cores (``/proc/stat``: user and nice; system, irq and
softirq; idle and iowait). So ``user + system + idle`` is about ``wall`` times the cores,
and where two placements of the same job differ, these say whether the difference is work
(user, the kernel's system time) or waiting (idle). Prints ``nan`` fields when there is
no window after the first.
"""

import os
import re
import sys
import time
from typing import Callable, Iterable

LOG_LINE = re.compile(r"^\[0\]<stdout>:iter: (\d+)/.*images/s: ([0-9.]+)")
FIRST_WINDOW_END = 20


def cpu_ticks() -> tuple[int, int, int]:
    """The machine's (user, system, idle) time so far, in clock ticks over all cores."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:8]]
    user, nice, system, idle, iowait, irq, softirq = fields
    return user + nice, system + irq + softirq, idle + iowait


def summarize(lines: Iterable[str], clock: Callable[[], float] = time.monotonic,
              ticks: Callable[[], tuple[int, int, int]] = cpu_ticks,
              ticks_per_s: float = os.sysconf("SC_CLK_TCK")) -> str:
    """The line this script prints for a job's output `lines`; `clock` and `ticks` are read
    as each log line arrives."""
    rates = []
    start = end = None  # (step, seconds, ticks) at the first window's end and at the last line
    for line in lines:
        match = LOG_LINE.match(line)
        if not match:
            continue
        step, rate = int(match.group(1)), float(match.group(2))
        mark = (step, clock(), ticks())
        if step <= FIRST_WINDOW_END:
            start = mark
        else:
            rates.append(rate)
            end = mark
    if not rates or start is None or end is None:
        return "nan nan nan nan nan"
    steps = end[0] - start[0]
    ms_per_tick = 1000.0 / ticks_per_s
    wall = (end[1] - start[1]) * 1000.0 / steps
    user, system, idle = ((e - s) * ms_per_tick / steps for s, e in zip(start[2], end[2]))
    return f"{sum(rates) / len(rates):.2f} {wall:.1f} {user:.1f} {system:.1f} {idle:.1f}"


if __name__ == "__main__":
    print(summarize(sys.stdin))
