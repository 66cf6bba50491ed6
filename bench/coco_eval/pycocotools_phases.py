#!/usr/bin/env python3
"""Times pycocotools' COCO evaluation phase by phase, for dtrain-bench-coco-eval.

Runs COCO(gt), loadRes(results), COCOeval.evaluate(), accumulate() and
summarize() on one pair of files and writes one JSON object: the seconds of
each phase, the twelve statistics, this process's peak RSS (getrusage) and
which pycocotools ran. pycocotools is imported from --pycocotools DIR (the
folder holding the built `pycocotools` package, e.g. a source checkout's
PythonAPI after `python3 setup.py build_ext --inplace`); nothing of it is part
of dtrain. Its own printing goes to stderr, so stdout stays empty.
"""
import argparse
import contextlib
import json
import os
import resource
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pycocotools", required=True, metavar="DIR",
                        help="folder that holds the built pycocotools package")
    parser.add_argument("--gt", required=True, help="ground truth (instances JSON)")
    parser.add_argument("--dt", required=True, help="results JSON")
    parser.add_argument("--iou-type", required=True, choices=["bbox", "segm"])
    parser.add_argument("--out", required=True, help="write the JSON report here")
    args = parser.parse_args()

    start = time.perf_counter()
    package_dir = os.path.abspath(args.pycocotools)
    sys.path.insert(0, package_dir)
    import numpy as np
    # cocodataset/cocoapi's cocoeval.py still says np.float, which NumPy 1.24
    # removed; it was Python's float. pycocotools from PyPI (ppwwyyxx/cocoapi)
    # does not need this.
    if not hasattr(np, "float"):
        np.float = float
    import pycocotools
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    if not os.path.abspath(pycocotools.__file__).startswith(package_dir + os.sep):
        sys.exit(f"pycocotools_phases.py: pycocotools came from {pycocotools.__file__}, "
                 f"not from {package_dir}")
    seconds = {"import": time.perf_counter() - start}

    def timed(name, call):
        t = time.perf_counter()
        result = call()
        seconds[name] = time.perf_counter() - t
        return result

    with contextlib.redirect_stdout(sys.stderr):
        gt = timed("load_gt", lambda: COCO(args.gt))
        dt = timed("load_results", lambda: gt.loadRes(args.dt))
        evaluator = COCOeval(gt, dt, args.iou_type)
        timed("evaluate", evaluator.evaluate)
        timed("accumulate", evaluator.accumulate)
        timed("summarize", evaluator.summarize)
    seconds["total"] = time.perf_counter() - start

    report = {
        "iou_type": args.iou_type,
        "seconds": seconds,
        "stats": [float(s) for s in evaluator.stats],
        "detections": len(dt.anns),
        # Linux reports ru_maxrss in KiB.
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "pycocotools": os.path.dirname(os.path.abspath(pycocotools.__file__)),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    with open(args.out, "w") as out:
        json.dump(report, out)
        out.write("\n")


if __name__ == "__main__":
    main()
