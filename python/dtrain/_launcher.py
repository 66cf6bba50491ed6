"""The ``dtrain`` command of an installed package (``pip install .``): runs the launcher
program installed beside the package (``dtrain run -np 2 -- python3 train.py``, ``dtrain job``,
...; ``dtrain --help`` lists them)."""
import os
import sys


def main() -> None:
    program = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "dtrain")
    if not os.access(program, os.X_OK):
        sys.exit(f"dtrain: the launcher is missing from this installation ({program}): reinstall with `pip install .`")
    os.execv(program, [program] + sys.argv[1:])


if __name__ == "__main__":
    main()
