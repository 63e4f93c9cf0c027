#!/usr/bin/env bash
# cuda.bindings' own tests (cuda_bindings/tests of NVIDIA/cuda-python; not in the wheel) under `python -m
# accel emu`: one pytest process per module, then the counts and each failure's first cause
# (tools/peer_suites/classify.py).  Nothing is fetched: get the tree once, at the tag of the installed
# cuda-bindings (`pip show cuda-bindings`), e.g. for 13.5.0:
#   git clone --filter=blob:none --no-checkout https://github.com/NVIDIA/cuda-python
#   cd cuda-python && git sparse-checkout set cuda_bindings/tests cuda_bindings/cuda/bindings/_test_helpers \
#       cuda_python_test_helpers && git checkout v13.5.0                 # `git tag -l 'v13*'`
# and copy cuda_bindings/cuda/bindings/_test_helpers into the installed cuda/bindings/.  Needs in this
# interpreter: accel with its stand-ins, cuda-bindings, nvidia-cuda-nvrtc, pytest, numpy.  Tests of
# cuda.bindings.runtime fail on the emulator whatever it does (a static libcudart that needs the driver's
# private export tables: class d, cuGetExportTable).
#
# Usage: tools/peer_suites/run_cuda_bindings.sh [-o OUTDIR] [-t SECONDS] CUDA_PYTHON_CLONE
set -euo pipefail
OUT="" LIMIT=600
while getopts "o:t:" opt; do
  case $opt in o) OUT=$OPTARG ;; t) LIMIT=$OPTARG ;; *) sed -n '2,17p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] && [ -d "$1/cuda_bindings/tests" ] || { sed -n '2,17p' "$0"; echo "error: give a clone of NVIDIA/cuda-python (with cuda_bindings/tests)" >&2; exit 2; }
"${PYTHON:-python3}" -c "import cuda.bindings.driver, cuda.bindings._test_helpers" || {
  echo "error: needs cuda-bindings and cuda/bindings/_test_helpers copied from the clone (see above)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/cuda_bindings_suite.XXXXXX)}
exec "$(dirname "$0")/_run_pytest_tree.sh" "$(cd "$1" && pwd)" cuda_bindings/tests "$OUT" "$LIMIT"
