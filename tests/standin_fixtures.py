"""Helpers shared by the stand-in tests (test_standin*.py, test_emu_cli.py, test_emu_driver_faults.py),
loaded by path: the suite runs with --import-mode=importlib, so test modules cannot import each other."""
import json
import os

import pytest

from accel import emu

# The stand-ins are built only with the compiled twin.
needs_standins = pytest.mark.skipif(not os.path.exists(emu.cudart_path()),
                                    reason="the stand-ins are not part of this install (-Dnative=false)")

try:
    import cuda.core  # noqa: F401
    HAVE_CUDA_CORE = True
except ImportError:
    HAVE_CUDA_CORE = False
needs_cuda_core = pytest.mark.skipif(not HAVE_CUDA_CORE, reason="cuda-core is not installed")


def runners(prelude):
    """``run(subprocess_python, code, env=None)``, which runs ``prelude + code`` in a fresh interpreter on
    four emulated devices (untraced) and asserts it exits 0, and ``json_(...)``, which does the same and
    returns the JSON value its last stdout line prints."""
    def run(subprocess_python, code, env=None):
        proc = subprocess_python(prelude + code,
                                 env={"ACCEL_EMU_DEVICES": "4", "ACCEL_EMU_TRACE": None, **(env or {})})
        assert proc.returncode == 0, proc.stderr
        return proc

    def json_(subprocess_python, code, env=None):
        return json.loads(run(subprocess_python, code, env).stdout.strip().splitlines()[-1])

    return run, json_
