#!/usr/bin/env python3
"""dtrain-bench relay load: `dtrain run -np N` with every rank printing at once.

Each of N local ranks writes LINES lines to stdout and a tenth as many to stderr as fast as a
shell can; the launcher's output relay prefixes and forwards them. Reported per world size,
over several rounds: the wall time of the whole run (launch included), lines per second, and
whether every line arrived whole, once, with its own rank's prefix, in its rank's order.
Exits non-zero when any line is lost, torn, duplicated or misattributed.

    bench/scaling/relay_load.py [--ranks 64,256] [--lines 200] [--rounds 3] [--dtrain build/apps/dtrain]
"""

import argparse
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORKER = (
    'i=0; while [ $i -lt {lines} ]; do '
    'echo "rank $DTRAIN_RANK line $i of a line long enough to look like a training log"; '
    'if [ $((i % 10)) -eq 0 ]; then echo "rank $DTRAIN_RANK warning $i" >&2; fi; '
    'i=$((i+1)); done'
)
LINE = re.compile(r"\[(\d+)\]<(stdout|stderr)>:rank (\d+) (line|warning) (\d+)( of a line long enough to look like a "
                  r"training log)?")


def check(stream: str, name: str, ranks: int, lines: int, step: int) -> list[str]:
    """Problems with one stream's relayed lines: each rank's lines whole, once, in order."""
    problems: list[str] = []
    expected = {r: 0 for r in range(ranks)}
    for text in stream.splitlines():
        match = LINE.fullmatch(text)
        if not match or match.group(2) != name or match.group(1) != match.group(3):
            problems.append(f"{name}: a torn or misattributed line: {text[:80]!r}")
            continue
        rank, index = int(match.group(1)), int(match.group(5))
        if index != expected[rank]:
            problems.append(f"{name}: rank {rank} line {index} where {expected[rank]} was due")
        expected[rank] = index + step
    for rank, due in expected.items():
        if due < lines:
            problems.append(f"{name}: rank {rank} stopped at line {due} of {lines}")
    return problems


def run_once(dtrain: str, ranks: int, lines: int) -> tuple[float, list[str]]:
    start = time.monotonic()
    done = subprocess.run([dtrain, "run", "-np", str(ranks), "--", "sh", "-c", WORKER.format(lines=lines)],
                          capture_output=True, text=True, errors="replace", timeout=600)
    seconds = time.monotonic() - start
    problems = [] if done.returncode == 0 else [f"dtrain run exited {done.returncode}"]
    problems += check(done.stdout, "stdout", ranks, lines, 1)
    # stderr also carries the launcher's own lines (not prefixed by a rank): only ranks' lines count.
    ranks_stderr = "\n".join(t for t in done.stderr.splitlines() if re.match(r"\[\d+\]<stderr>:", t))
    problems += check(ranks_stderr, "stderr", ranks, lines, 10)
    return seconds, problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", default="64,256")
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    root = Path(__file__).resolve().parents[2]
    parser.add_argument("--dtrain", default=str(root / "build" / "apps" / "dtrain"))
    args = parser.parse_args()
    print(f"{'ranks':>6} {'lines':>8} {'median s':>9} {'min-max s':>12} {'lines/s':>9} {'intact':>7}")
    failed = False
    for ranks in (int(n) for n in args.ranks.split(",")):
        times, problems = [], []
        for _ in range(args.rounds):
            seconds, found = run_once(args.dtrain, ranks, args.lines)
            times.append(seconds)
            problems += found
        total = ranks * (args.lines + (args.lines + 9) // 10)
        median = statistics.median(times)
        print(f"{ranks:>6} {total:>8} {median:>9.2f} {min(times):>5.2f}-{max(times):<6.2f} {total / median:>9.0f} "
              f"{'yes' if not problems else 'NO':>7}")
        for problem in problems[:5]:
            print(f"  {problem}")
        failed |= bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
