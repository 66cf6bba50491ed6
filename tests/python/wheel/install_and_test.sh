#!/usr/bin/env bash
# The package as a user installs it: `pip wheel .` builds a wheel against the torch of the
# Python given, a new virtual environment gets that wheel (and the same torch), and the
# collectives and DDP suites run from it through the installed `dtrain` command, with nothing
# of the source or build tree on the path.
#
#   tests/python/wheel/install_and_test.sh PYTHON SOURCE_DIR WORK_DIR
#
# The new environment sees PYTHON's packages (torch, pytest) through a .pth file instead of a
# second multi-gigabyte copy of torch: the same torch, as the issue asks, and no download.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 PYTHON SOURCE_DIR WORK_DIR" >&2; exit 2; }
python="$1"; source="$2"; work="$3"
rm -rf "$work/wheelhouse" "$work/venv"
mkdir -p "$work"

# ccache as scripts/build uses it, the build folder inside the clone: a second run compiles little.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/dtrain-ccache}" CCACHE_BASEDIR="$source" CCACHE_NOHASHDIR=1
export CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"
"$python" -m pip wheel --quiet --no-build-isolation --no-deps --wheel-dir "$work/wheelhouse" \
  --config-settings=build-dir="$work/build" "$source"
wheel="$(ls "$work"/wheelhouse/dtrain-*.whl)"
echo "built $(basename "$wheel")"

"$python" -m venv "$work/venv"
site_of() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
site_of "$python" > "$(site_of "$work/venv/bin/python")/torch-environment.pth"
"$work/venv/bin/python" -m pip install --quiet --no-deps --no-index "$wheel"

cd "$work"   # away from the source tree, whose python/dtrain must not be what imports
unset PYTHONPATH
"$work/venv/bin/python" - <<'PY'
import dtrain.torch, os, sys
where = os.path.dirname(dtrain.torch.__file__)
assert where.startswith(sys.prefix), f"dtrain.torch imported from {where}, not the new environment {sys.prefix}"
print(f"dtrain.torch from {where}")
PY
for suite in torch/test_collectives.py distributed/test_ddp.py; do
  "$work/venv/bin/dtrain" run -np 2 --stall-shutdown-s 60 -- \
    "$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$source/tests/python/$suite"
done
