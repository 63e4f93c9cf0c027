#!/usr/bin/env bash
# Shared by run_cuda_core.sh and run_cuda_bindings.sh: every test_*.py under TREE (relative to ROOT, a
# clone of NVIDIA/cuda-python) run by pytest under `python -m accel emu`, one process per module, each
# leaving OUT/<module>.xml (JUnit) and OUT/<module>.log; then classify.py's counts and first causes.
# Usage: _run_pytest_tree.sh ROOT TREE OUT LIMIT
set -uo pipefail
ROOT=$1 TREE=$2 OUT=$3 LIMIT=$4
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
unset ACCEL_CUDART LD_PRELOAD CUDA_VISIBLE_DEVICES ACCEL_EMU_FAIL ACCEL_EMU_TRACE
mkdir -p "$OUT"
cd "$ROOT"      # the clone's pytest.ini / conftest.py apply
mapfile -t FILES < <(find "$TREE" -name 'test_*.py' | sort)
[ ${#FILES[@]} -gt 0 ] || { echo "no test_*.py under $ROOT/$TREE" >&2; exit 2; }
echo "$TREE under accel emu: ${#FILES[@]} modules, reports in $OUT"
for f in "${FILES[@]}"; do
  name=$(echo "${f%.py}" | tr / .)
  timeout "$LIMIT" "$PYTHON" -m accel emu --devices "${ACCEL_EMU_DEVICES:-2}" -- "$PYTHON" -m pytest -q \
    -p no:cacheprovider -o junit_logging=no --junitxml="$OUT/$name.xml" "$f" >"$OUT/$name.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then
    echo "TIMEOUT (the module ran past its time limit of ${LIMIT}s)" >>"$OUT/$name.log"
    rm -f "$OUT/$name.xml"
  fi
  printf '%s: %s\n' "$name" "$(tail -n 1 "$OUT/$name.log")"
done
"$PYTHON" "$HERE/classify.py" "$OUT" --json "$OUT/summary.json"
