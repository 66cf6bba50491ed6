#!/usr/bin/env bash
# Serving and inference do not carry the collective runtime (docs/architecture.md): checked on
# the built programs, not on the CMake files, so that a dependency that arrives transitively
# fails too.
#
#   check_link_dependencies.sh --without-runtime PROGRAM... --with-runtime PROGRAM
#
# A program "without the runtime" may neither need Open MPI's, NCCL's or Gloo's shared
# libraries directly nor hold a symbol of dtrain's runtime or of Gloo. The program "with the
# runtime" (dtrain itself) must show both, so that the check is known to see them.
set -euo pipefail

without=() with=()
mode=
for arg in "$@"; do
  case $arg in
    --without-runtime) mode=without ;;
    --with-runtime) mode=with ;;
    *) if [[ $mode == without ]]; then without+=("$arg"); elif [[ $mode == with ]]; then with+=("$arg");
       else echo "usage: $0 --without-runtime PROGRAM... --with-runtime PROGRAM" >&2; exit 2; fi ;;
  esac
done

# What of the runtime a program holds: one line per kind found.
runtime_parts() {
  local program=$1
  readelf -d "$program" | grep -E 'NEEDED.*\[lib(mpi|nccl|gloo)' | sed 's/.*\[\(.*\)\]/needs \1/' || true
  local symbols
  symbols=$(nm -C "$program" 2>/dev/null | grep -cE ' dtrain::runtime::| gloo::' || true)
  if [[ $symbols -gt 0 ]]; then echo "holds $symbols symbols of dtrain::runtime or gloo"; fi
}

failed=0
for program in "${with[@]}"; do
  if [[ -z $(runtime_parts "$program") ]]; then
    echo "check_link_dependencies: $program should hold the runtime but nothing of it was found" >&2
    failed=1
  fi
done
for program in "${without[@]}"; do
  found=$(runtime_parts "$program")
  if [[ -n $found ]]; then
    while IFS= read -r line; do echo "check_link_dependencies: $program $line" >&2; done <<<"$found"
    failed=1
  else
    echo "$(basename "$program"): no collective runtime"
  fi
done
exit $failed
