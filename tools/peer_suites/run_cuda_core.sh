#!/usr/bin/env bash
# cuda.core's own tests (cuda_core/tests of NVIDIA/cuda-python; not in the wheel) under `python -m accel
# emu`: one pytest process per module, then the pass / fail / error / skip counts and each failure's first
# cause (tools/peer_suites/classify.py).  Nothing is fetched: get the tree once, at the tag of the
# installed cuda-core (`pip show cuda-core`), e.g. for 1.2.2:
#   git clone --filter=blob:none --no-checkout https://github.com/NVIDIA/cuda-python
#   cd cuda-python && git sparse-checkout set cuda_core/tests cuda_bindings/cuda/bindings/_test_helpers \
#       cuda_python_test_helpers && git checkout cuda-core-v1.2.2   # `git tag -l 'cuda-core-v*'`
# and copy cuda_bindings/cuda/bindings/_test_helpers into the installed cuda/bindings/ (the wheel lacks it;
# the tests import it).  Needs in this interpreter: accel with its stand-ins, cuda-core, cuda-bindings,
# nvidia-cuda-nvrtc, pytest (and numpy, cupy-less tests skip what they cannot import).
#
# Usage: tools/peer_suites/run_cuda_core.sh [-o OUTDIR] [-t SECONDS] CUDA_PYTHON_CLONE
set -euo pipefail
OUT="" LIMIT=600
while getopts "o:t:" opt; do
  case $opt in o) OUT=$OPTARG ;; t) LIMIT=$OPTARG ;; *) sed -n '2,16p' "$0"; exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] && [ -d "$1/cuda_core/tests" ] || { sed -n '2,16p' "$0"; echo "error: give a clone of NVIDIA/cuda-python (with cuda_core/tests)" >&2; exit 2; }
"${PYTHON:-python3}" -c "import cuda.core, cuda.bindings._test_helpers" || {
  echo "error: needs cuda-core and cuda/bindings/_test_helpers copied from the clone (see above)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/cuda_core_suite.XXXXXX)}
exec "$(dirname "$0")/_run_pytest_tree.sh" "$(cd "$1" && pwd)" cuda_core/tests "$OUT" "$LIMIT"
