#!/usr/bin/python3
"""Every ctest test has exactly one tier label (unit, multiprocess or e2e) and no label outside
the list in tests/CMakeLists.txt.

`scripts/test -L unit` is the quick tier only if every test says which tier it is in: a test
without a tier would drop out of every tiered run, one with two would run in both, and a
mistyped label would go unnoticed. The labels are read from ctest's own listing of this build
(`ctest --show-only=json-v1`, which runs nothing), so tests that gtest_discover_tests finds after
the build are checked as well.

Usage: check_test_tiers.py CTEST BUILD_DIR
Prints each offending test on a line of its own and exits 1 if there is any.
"""
import json
import subprocess
import sys

TIERS = {"unit", "multiprocess", "e2e"}
# Component labels: what a test needs besides the build (tests/CMakeLists.txt says which is which).
COMPONENTS = {"python", "slurm", "browser", "netns", "fuzz", "gpu"}


def labels_of(test):
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            return prop["value"]
    return []


def main(argv):
    if len(argv) != 3:
        print(f"usage: {argv[0]} CTEST BUILD_DIR", file=sys.stderr)
        return 2
    ctest, build_dir = argv[1], argv[2]
    listing = subprocess.run([ctest, "--show-only=json-v1"], cwd=build_dir, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
    tests = json.loads(listing)["tests"]
    if not tests:
        print(f"ctest lists no tests in {build_dir}")
        return 1
    offenders = []
    for test in tests:
        labels = labels_of(test)
        tiers = [label for label in labels if label in TIERS]
        unknown = [label for label in labels if label not in TIERS | COMPONENTS]
        if len(tiers) != 1:
            offenders.append(f"{test['name']}: {len(tiers)} tier labels (labels: {';'.join(labels) or 'none'})")
        elif unknown:
            offenders.append(f"{test['name']}: unknown label {';'.join(unknown)}")
    if offenders:
        print(f"{len(offenders)} of {len(tests)} tests need exactly one of unit, multiprocess, e2e "
              f"and only the labels listed in tests/CMakeLists.txt:")
        print("\n".join(offenders))
        return 1
    print(f"{len(tests)} tests, each in one tier")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
