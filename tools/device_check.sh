#!/usr/bin/env bash
# One run on a GPU machine: build accel with that machine's Python, report it, run the test suite against the
# real libcudart (ACCEL_TEST_CUDART), rerun its failures one process at a time, then the bench with the peers
# (ACCEL_BENCH_CUDART).  Logs go to $OUT (default /tmp/device-check).  From the checkout's root:
#     OUT=/tmp/out bash tools/device_check.sh
# Wheels in .whl/ (meson-python and what the build needs that the machine lacks) are installed first, to
# /tmp/site.  TEST_SECONDS / BENCH_SECONDS bound the two long steps.
set -u
OUT=${OUT:-/tmp/device-check}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
TEST_SECONDS=${TEST_SECONDS:-240}
BENCH_SECONDS=${BENCH_SECONDS:-150}
log() { echo "== $(date +%T) $*"; }

{
    log machine
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
    $PY -V; nproc
    $PY -m pip list 2>/dev/null | grep -i -E '^(cython|meson|meson-python|numpy|torch|cuda-core|cuda-bindings|cupy-cuda13x|numba-cuda|nvidia-ml-py|pytest|pytest-xdist|pytest-timeout|pytest-benchmark|hypothesis) '
    if ls .whl/*.whl >/dev/null 2>&1; then
        $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
        export PYTHONPATH=/tmp/site
    fi
    log build
    time $PY -m pip install -q --no-build-isolation --no-deps -Cbuild-dir=build-device . || { log BUILD FAILED; exit 1; }
} >"$OUT/setup.log" 2>&1 || exit 1

RT=$(ls /usr/local/cuda/lib64/libcudart.so.13 /usr/local/cuda*/lib64/libcudart.so.13 2>/dev/null | head -1)
if [ -z "$RT" ]; then
    RT=$($PY -c "import glob, sys; c = glob.glob(sys.prefix + '/lib/python3*/site-packages/nvidia/cu13/lib/libcudart.so.13'); print(c[0] if c else '')")
fi
{
    log "cudart=$RT"
    (cd /tmp && ACCEL_CUDART=$RT $PY -m accel)
    (cd /tmp && ACCEL_CUDART=$RT $PY -c "
import accel, accel.cuda as c
print(accel.backend, c.is_available(), c.device_count(), c.get_device_name(0), c.get_device_capability(0))
print(c.get_device_properties(0))
print('mem_get_info', c.mem_get_info(0))
")
} >>"$OUT/setup.log" 2>&1

log tests >>"$OUT/setup.log"
ACCEL_TEST_CUDART=$RT timeout "$TEST_SECONDS" $PY -P -m pytest -q -rfE -p no:randomly --timeout=60 \
    -n 8 --dist loadfile --ignore-glob='tests/test_lazy*' --junitxml="$OUT/junit.xml" >"$OUT/tests.log" 2>&1
echo "pytest rc=$?" >>"$OUT/tests.log"

# The failures once more, serially (the parallel run shares one GPU between eight workers).
ACCEL_TEST_CUDART=$RT timeout "${RERUN_SECONDS:-120}" $PY - "$OUT/junit.xml" "$OUT/failed.txt" >"$OUT/rerun.log" 2>&1 <<'EOF'
import subprocess, sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception as exc:
    sys.exit(f"no junit: {exc}")
failed = []
for case in root.iter("testcase"):
    if case.find("failure") is not None or case.find("error") is not None:
        parts = case.get("classname").split(".")
        mod = [p for p in parts if p.startswith("test_")]
        i = parts.index(mod[0]) if mod else len(parts) - 1
        failed.append("/".join(parts[:i + 1]) + ".py" + "".join("::" + p for p in parts[i + 1:])
                      + "::" + case.get("name"))
open(sys.argv[2], "w").write("".join(f + "\n" for f in failed))
print(len(failed), "failed in the parallel run", flush=True)
if failed:
    rc = subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-rfE", "-p", "no:randomly", "--timeout=60"]
                        + failed[:300]).returncode
    print("rerun rc", rc)
EOF

ACCEL_BENCH_CUDART=$RT timeout "$BENCH_SECONDS" $PY -P -m pytest -q -p no:randomly \
    bench/test_bench_cudart.py bench/test_bench_device.py bench/test_bench_stream.py bench/test_bench_memory.py \
    bench/test_bench_graphs.py bench/test_bench_peers.py \
    --benchmark-only --benchmark-min-rounds=5 --benchmark-max-time=0.05 --benchmark-columns=median,iqr,rounds \
    >"$OUT/bench.log" 2>&1
echo "bench rc=$?" >>"$OUT/bench.log"
log done >>"$OUT/setup.log"
