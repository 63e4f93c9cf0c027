"""numba-cuda's own driver tests (``numba.cuda.tests.cudadrv``, shipped in its wheel) on the stand-ins with
`python -m accel emu`: the pass count must not fall below what the emulator reached (issue 18), and every
test that does not pass must fail because it launches or links a kernel that the emulator cannot run
(CUDA_ERROR_NO_BINARY_FOR_GPU: nvJitLink hands the driver a SASS cubin, until accel emu makes it hand over PTX;
CUDA_ERROR_NOT_SUPPORTED: what the emulator lacks) or because an optional package it imports is absent.

Optional: skipped unless this interpreter has numba-cuda with what its driver tests import (filecheck,
cffi) and the compilers that turn their kernels into PTX (NVRTC and NVVM: ``pip install numba-cuda[cu13]``),
so that kernel tests reach the driver and fail there, not earlier.  The README's command reproduces it.
"""
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile

import pytest

from accel import emu

# What the emulator reached with numba-cuda 0.30.4 (29 modules, 267 tests: 186 pass, 19 skip, 62 fail).
PASS_FLOOR = 186
# Tests that count the kernels their threads launched: the threads' tracebacks (printed apart from the
# report) end in the launch's error, the report itself is "0 != 1".
KERNELS_IN_THREADS = {"test_concurrent_initialization", "test_concurrent_initialization_different_args"}


def _missing():
    need = []
    for dist in ("numba-cuda", "nvidia-cuda-nvrtc", "nvidia-nvvm"):
        try:
            importlib.metadata.distribution(dist)
        except importlib.metadata.PackageNotFoundError:
            need.append(dist)
    need += [mod for mod in ("filecheck", "cffi") if importlib.util.find_spec(mod) is None]
    return need


MISSING = _missing()

pytestmark = [
    pytest.mark.skipif(not os.path.exists(emu.cudart_path()), reason="the stand-ins are not part of this install"),
    pytest.mark.skipif(bool(MISSING), reason=f"needs {', '.join(MISSING)} (numba-cuda's driver tests and the "
                                             "compilers its kernel tests need)"),
]


def test_numba_cuda_driver_tests_on_the_emulator():
    env = {k: v for k, v in os.environ.items()
           if k not in ("ACCEL_CUDART", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "ACCEL_EMU_FAIL", "ACCEL_EMU_TRACE")}
    env["ACCEL_EMU_MEMORY"] = "2G"      # test_managed_alloc fills half the device's memory
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--devices", "4", "--", sys.executable, "-m",
                           "numba.runtests", "-v", "numba.cuda.tests.cudadrv"], env=env, capture_output=True,
                          text=True, timeout=300, cwd=tempfile.gettempdir())
    out = proc.stdout + proc.stderr
    ran = re.search(r"^Ran (\d+) tests? in", out, re.M)
    assert ran, out[-3000:]
    counts = {k: int(v) for k, v in re.findall(r"(failures|errors|skipped)=(\d+)", out.splitlines()[-1])}
    failed = counts.get("failures", 0) + counts.get("errors", 0)
    passed = int(ran.group(1)) - failed - counts.get("skipped", 0)
    # each failure or error report: the emulator's "not supported" (a kernel), or an optional import
    reports = re.split(r"^={70}$", out, flags=re.M)[1:]
    unexpected = [r.strip().splitlines()[0] for r in reports
                  if "CUDA_ERROR_NOT_SUPPORTED" not in r and "CUDA_ERROR_NO_BINARY_FOR_GPU" not in r
                  and "Skipped: could not import" not in r
                  and r.strip().split()[1] not in KERNELS_IN_THREADS]
    assert not unexpected, unexpected
    assert len(reports) == failed
    assert passed >= PASS_FLOOR, (passed, counts)
