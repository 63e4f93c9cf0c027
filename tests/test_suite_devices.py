"""The suite's own device mechanism (tests/conftest.py): ``@pytest.mark.devices(n)`` skips a test, naming the
need, where the runtime has fewer than n CUDA devices, and ``@pytest.mark.emu_only`` where the runtime is not
the emulator.  ``ACCEL_EMU_DEVICES=1 pytest`` is the local stand-in for a machine with one GPU; a runtime that
cannot be loaded has no device at all.  Each case runs a small part of the suite in a fresh pytest."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
PYTEST = os.path.join(os.path.dirname(sys.executable), "pytest")


def run_suite(args, **env):
    """``pytest -q -rs ARGS`` from the checkout's root with ``env`` on top of this run's (None: unset)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    for k, v in env.items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    proc = subprocess.run([PYTEST, "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:randomly", *args], cwd=REPO,
                          env=full, capture_output=True, text=True, timeout=300)
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|skipped|failed|errors?|xfailed)", proc.stdout)}
    return proc, counts


def skip_reasons(proc):
    """{reason: number of tests} of the -rs summary."""
    out = {}
    for n, reason in re.findall(r"^SKIPPED \[(\d+)\] [^:]+:\d+: (.*)$", proc.stdout, re.M):
        out[reason] = out.get(reason, 0) + int(n)
    return out


@pytest.mark.emu_only("ACCEL_EMU_DEVICES")
def test_one_emulated_device_skips_the_multi_device_tests():
    proc, counts = run_suite(["tests/test_set_device.py", "tests/test_devices_api.py"], ACCEL_EMU_DEVICES="1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reasons = skip_reasons(proc)
    assert reasons.get("needs 3 CUDA devices, the emulator (ACCEL_EMU_DEVICES=1) has 1", 0) >= 5, reasons
    assert reasons.get("needs 2 CUDA devices, the emulator (ACCEL_EMU_DEVICES=1) has 1", 0) >= 3, reasons
    assert all(r.startswith("needs ") for r in reasons), reasons
    assert counts["passed"] > 100 and "failed" not in counts and "error" not in counts, counts


def test_no_runtime_skips_what_needs_a_device():
    proc, counts = run_suite(["tests/test_set_device.py", "tests/test_streams_diff.py"],
                             ACCEL_TEST_CUDART="/nonexistent/libcudart.so.13")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    reasons = skip_reasons(proc)
    need1 = [r for r in reasons if r.startswith("needs 1 CUDA device, this machine has 0, no CUDA runtime: ")]
    assert need1 and "/nonexistent/libcudart.so.13" in need1[0], reasons
    assert "failed" not in counts and "error" not in counts, counts


def test_markers_are_registered():
    proc, counts = run_suite(["--strict-markers", "--collect-only", "tests/test_set_device.py",
                              "tests/test_devices_init.py"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
