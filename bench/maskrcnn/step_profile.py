"""Summarises the profiler traces `dtrain-bench-maskrcnn --profile-dir DIR` writes: for each
configuration, dtrain and torchvision side by side, per phase of a training step (host time,
GPU time, kernels), the step's GPU busy and idle time, kernel launches, host synchronisations,
and the kernels that take the most GPU time.

Usage: step_profile.py DIR [--json OUT] [--top N]

Both sides mark a step and its phases with the same profiler ranges (record_function in
torchvision_step.py, RECORD_USER_SCOPE in dtrain): bench.step around a whole step;
mask_rcnn.inputs, .backbone, .rpn, .roi_heads inside bench.forward; bench.backward and
bench.optimizer. A GPU activity (kernel, copy, fill) belongs to the innermost range that was
open on the host when it was launched: backward's kernels are launched by autograd's own
thread while the step's thread waits inside bench.backward, so ranges are matched by time,
not by thread.
"""
import argparse
import bisect
import collections
import json
import os
import re
import statistics
import sys
from typing import Dict, Iterable, List, Optional, Tuple

STEP = "bench.step"
# The rows of the report, in step order; "forward, other" is bench.forward outside the model's
# phases (the loss sum, torchvision's target checks).
PHASES = ["mask_rcnn.inputs", "mask_rcnn.backbone", "mask_rcnn.rpn", "mask_rcnn.roi_heads", "bench.forward",
          "bench.backward", "bench.optimizer"]
PHASE_LABELS = {"mask_rcnn.inputs": "inputs (checks, to device, transform)", "mask_rcnn.backbone": "backbone + FPN",
                "mask_rcnn.rpn": "RPN", "mask_rcnn.roi_heads": "RoI heads", "bench.forward": "forward, other",
                "bench.backward": "backward", "bench.optimizer": "optimizer (and loss scaling)"}
GPU_CATEGORIES = {"kernel", "gpu_memcpy", "gpu_memset"}
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver"}
# Calls after which the host waits for the GPU (a .item(), a copy to the host, a synchronize).
SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
              "cuStreamSynchronize", "cuCtxSynchronize"}


class Range:
    """A named host interval, in microseconds."""

    def __init__(self, name: str, start: float, end: float) -> None:
        self.name, self.start, self.end = name, start, end

    def contains(self, t: float) -> bool:
        return self.start <= t <= self.end


def load_events(path: str) -> List[dict]:
    with open(path) as f:
        trace = json.load(f)
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def busy_time(intervals: Iterable[Tuple[float, float]]) -> float:
    """Length of the union of intervals."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def summarize(events: List[dict], top: int = 15) -> Dict:
    """Per-step averages over the steps the trace holds (milliseconds, counts)."""
    complete = [e for e in events if e.get("ph") == "X" and "ts" in e and "dur" in e]
    ranges = [Range(e["name"], float(e["ts"]), float(e["ts"]) + float(e["dur"]))
              for e in complete
              if e.get("cat") != "gpu_user_annotation" and (e["name"] == STEP or e["name"] in PHASES)]
    steps = sorted((r for r in ranges if r.name == STEP), key=lambda r: r.start)
    if not steps:
        raise ValueError(f"no '{STEP}' range in the trace: was it written by dtrain-bench-maskrcnn --profile-dir?")
    phases = [r for r in ranges if r.name in PHASES]
    launches = {}
    syncs = []
    for e in complete:
        if e.get("cat") in LAUNCH_CATEGORIES:
            correlation = e.get("args", {}).get("correlation")
            if correlation is not None:
                launches[correlation] = float(e["ts"])
            if e["name"] in SYNC_CALLS:
                syncs.append((float(e["ts"]), float(e["dur"])))
    gpu = [e for e in complete if e.get("cat") in GPU_CATEGORIES]

    step_starts = [s.start for s in steps]

    def step_of(t: float) -> Optional[int]:
        i = bisect.bisect_right(step_starts, t) - 1
        return i if i >= 0 and steps[i].contains(t) else None

    def phase_of(t: float) -> str:
        # The innermost (latest-starting) phase range open at t.
        inner = None
        for r in phases:
            if r.contains(t) and (inner is None or r.start >= inner.start):
                inner = r
        return inner.name if inner else "outside phases"

    per_step = [{"wall_ms": (s.end - s.start) / 1e3, "intervals": [], "kernels": 0, "copies": 0, "fills": 0,
                 "syncs": 0, "sync_ms": 0.0} for s in steps]
    per_phase = collections.defaultdict(lambda: {"host_ms": 0.0, "gpu_ms": 0.0, "kernels": 0})
    kernel_time = collections.defaultdict(lambda: [0.0, 0])
    for r in phases:
        if step_of(r.start) is not None:
            per_phase[r.name]["host_ms"] += (r.end - r.start) / 1e3
    for e in gpu:
        launched = launches.get(e.get("args", {}).get("correlation"))
        if launched is None:
            continue
        s = step_of(launched)
        if s is None:
            continue
        start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        record = per_step[s]
        record["intervals"].append((start, end))
        category = e["cat"]
        if category == "kernel":
            record["kernels"] += 1
            kernel_time[e["name"]][0] += (end - start) / 1e3
            kernel_time[e["name"]][1] += 1
        else:
            record["copies" if category == "gpu_memcpy" else "fills"] += 1
        phase = per_phase[phase_of(launched)]
        phase["gpu_ms"] += (end - start) / 1e3
        phase["kernels"] += category == "kernel"
    for ts, dur in syncs:
        s = step_of(ts)
        if s is not None:
            per_step[s]["syncs"] += 1
            per_step[s]["sync_ms"] += dur / 1e3

    n = len(steps)
    for record in per_step:
        record["gpu_busy_ms"] = busy_time(record.pop("intervals")) / 1e3
        record["gpu_idle_ms"] = record["wall_ms"] - record["gpu_busy_ms"]

    def mean(key: str) -> float:
        return statistics.fmean(record[key] for record in per_step)

    # A phase's share of bench.forward is reported without its nested model phases.
    forward = per_phase.get("bench.forward")
    if forward:
        for name in ("mask_rcnn.inputs", "mask_rcnn.backbone", "mask_rcnn.rpn", "mask_rcnn.roi_heads"):
            forward["host_ms"] -= per_phase.get(name, {}).get("host_ms", 0.0)
    phase_table = {name: {key: value / n for key, value in per_phase[name].items()}
                   for name in PHASES + ["outside phases"] if name in per_phase}
    busiest = sorted(kernel_time.items(), key=lambda item: -item[1][0])[:top]
    return {
        "steps": n,
        "wall_ms": mean("wall_ms"),
        "gpu_busy_ms": mean("gpu_busy_ms"),
        "gpu_idle_ms": mean("gpu_idle_ms"),
        "kernels": mean("kernels"),
        "copies": mean("copies"),
        "fills": mean("fills"),
        "syncs": mean("syncs"),
        "sync_ms": mean("sync_ms"),
        "phases": phase_table,
        "top_kernels": [{"name": name, "ms": total / n, "count": count / n} for name, (total, count) in busiest],
    }


def short_kernel_name(name: str, width: int = 90) -> str:
    name = re.sub(r"\s+", " ", name)
    return name if len(name) <= width else name[:width - 3] + "..."


def format_config(config: str, sides: Dict[str, Dict], top: int) -> str:
    names = sorted(sides, key=lambda side: (not side.startswith("torchvision"), side))
    lines = [f"### {config}", "", "| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]

    def row(label: str, values: List[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    row("step (profiled), ms", [f"{sides[s]['wall_ms']:.1f}" for s in names])
    row("GPU busy / idle, ms", [f"{sides[s]['gpu_busy_ms']:.1f} / {sides[s]['gpu_idle_ms']:.1f}" for s in names])
    row("kernels / copies / fills", [f"{sides[s]['kernels']:.0f} / {sides[s]['copies']:.0f} / {sides[s]['fills']:.0f}"
                                     for s in names])
    row("host waits for the GPU (count, ms)", [f"{sides[s]['syncs']:.0f}, {sides[s]['sync_ms']:.1f}" for s in names])
    for phase in PHASES + ["outside phases"]:
        values = []
        for s in names:
            p = sides[s]["phases"].get(phase)
            values.append(f"{p['host_ms']:.1f} host, {p['gpu_ms']:.1f} GPU, {p['kernels']:.0f} k" if p else "-")
        row(PHASE_LABELS.get(phase, phase), values)
    for s in names:
        lines += ["", f"{s}: the {top} kernels with the most GPU time per step", ""]
        for k in sides[s]["top_kernels"][:top]:
            lines.append(f"- {k['ms']:.2f} ms, {k['count']:.0f}x: `{short_kernel_name(k['name'])}`")
    return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--json", help="write every summary to this file")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    # SIDE_IMAGES_AMP.json, SIDE possibly with variants joined by '-'.
    pattern = re.compile(r"^(?P<side>.+)_(?P<images>\d+)_(?P<amp>off|float16|bfloat16)\.json$")
    configs: Dict[str, Dict[str, Dict]] = collections.defaultdict(dict)
    for name in sorted(os.listdir(args.directory)):
        match = pattern.match(name)
        if not match:
            continue
        config = f"{match['images']} images, {match['amp']}"
        try:
            configs[config][match["side"]] = summarize(load_events(os.path.join(args.directory, name)), args.top)
        except (ValueError, KeyError, json.JSONDecodeError) as error:
            print(f"step_profile.py: {name}: {error}", file=sys.stderr)
            return 1
    if not configs:
        print(f"step_profile.py: no SIDE_IMAGES_AMP.json traces in {args.directory}", file=sys.stderr)
        return 1
    for config in sorted(configs, key=lambda c: (int(c.split()[0]), c)):
        print(format_config(config, configs[config], args.top))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(configs, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
