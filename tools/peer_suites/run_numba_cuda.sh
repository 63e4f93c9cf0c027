#!/usr/bin/env bash
# numba-cuda's own test suite (numba.cuda.tests, shipped in its wheel) under `python -m accel emu`: one
# process per test module (numba's unittest runner, `python -m numba.runtests -v -b`), then the counts
# and each failure's first cause (tools/peer_suites/classify.py).
#
# Needs: accel built with its stand-ins, and in the same interpreter `pip install "numba-cuda[cu13]"
# filecheck cffi` (NVVM, NVRTC, nvJitLink and what the driver tests import).  Nothing is fetched.
#
# Usage: tools/peer_suites/run_numba_cuda.sh [-o OUTDIR] [-t SECONDS] [PACKAGE-OR-MODULE ...]
#   PACKAGE-OR-MODULE: e.g. cudadrv, cudapy.test_atomics (under numba.cuda.tests; default: all of it)
#   -o: where the per-module logs and summary.json go (default: a new folder under /tmp)
#   -t: time limit per module in seconds (default 900); a module past it counts as one error (class d)
# Environment: PYTHON (default: python3), ACCEL_EMU_DEVICES (default 2), ACCEL_EMU_MEMORY (default 2G:
# test_managed_alloc fills half the device's memory).
set -euo pipefail
PYTHON=${PYTHON:-python3}
OUT=""
LIMIT=900
while getopts "o:t:" opt; do
  case $opt in
    o) OUT=$OPTARG ;;
    t) LIMIT=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
OUT=${OUT:-$(mktemp -d /tmp/numba_cuda_suite.XXXXXX)}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
export ACCEL_EMU_MEMORY=${ACCEL_EMU_MEMORY:-2G}
unset ACCEL_CUDART LD_PRELOAD CUDA_VISIBLE_DEVICES ACCEL_EMU_FAIL ACCEL_EMU_TRACE

# the test modules: every test*.py under the packages / modules asked for
mapfile -t MODULES < <("$PYTHON" - "$@" <<'PY'
import os, pkgutil, sys
import numba.cuda.tests as tests
root = os.path.dirname(tests.__file__)
wanted = sys.argv[1:] or sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "__init__.py")))
for w in wanted:
    path = os.path.join(root, *w.split("."))
    if os.path.isdir(path):
        for m in sorted(pkgutil.iter_modules([path]), key=lambda m: m.name):
            if m.name.startswith("test"):
                print(f"numba.cuda.tests.{w}.{m.name}")
    elif os.path.isfile(path + ".py"):
        print(f"numba.cuda.tests.{w}")
    else:
        sys.exit(f"no test package or module numba.cuda.tests.{w}")
PY
)
cd "$OUT"     # not a checkout: the installed packages are what runs
echo "numba-cuda suite under accel emu: ${#MODULES[@]} modules, logs in $OUT"
for mod in "${MODULES[@]}"; do
  log="$OUT/$mod.log"
  if ! timeout "$LIMIT" "$PYTHON" -m accel emu --devices "${ACCEL_EMU_DEVICES:-2}" -- \
      "$PYTHON" -m numba.runtests -v -b "$mod" >"$log" 2>&1; then
    [ $? -eq 124 ] && echo "TIMEOUT (the module ran past its time limit of ${LIMIT}s)" >>"$log"
  fi
  printf '%s: %s\n' "$mod" "$(tail -n 1 "$log")"
done
"$PYTHON" "$HERE/classify.py" "$OUT" --json "$OUT/summary.json"
