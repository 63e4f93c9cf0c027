"""pytest-benchmark's own numbers are per operation: a row timed as an inline loop of 100 guards reports what one
guard costs in pytest-benchmark's table, ``--benchmark-json`` (and so ``--benchmark-compare``), as the per-call
rows of its group do; they were 100x off next to them.  Runs two rows of bench/test_bench_device.py for real."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from accel import _build_config

REPO = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not (REPO / "bench" / "conftest.py").exists(),
                                reason="no checkout next to the tests (the benchmarks live in its bench/)")


def test_loop_rows_are_reported_per_operation_in_json_and_tables(tmp_path):
    twin = "native" if _build_config.NATIVE else "python"
    rows = (f"test_floor_with_device_noop[{twin}]", f"test_floor_raw_cudaGetDevice[{twin}]")
    out = tmp_path / "bench.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_")}
    env.pop("ACCEL_CUDART", None)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "pytest"), "-q", "--benchmark-only",
                           f"--benchmark-json={out}", "--benchmark-columns=median",
                           *(f"bench/test_bench_device.py::{r}" for r in rows)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = {b["name"]: b for b in json.loads(out.read_text())["benchmarks"]}
    guard, raw = got[rows[0]], got[rows[1]]
    assert guard["extra_info"]["per"] == 100 and guard["extra_info"]["stats_per_op"] is True
    assert guard["stats"]["iterations"] == 2000          # 20 calls of a 100-guard loop per round: 2000 operations
    assert raw["stats"]["iterations"] == 2000 and "stats_per_op" not in raw["extra_info"]
    # one guard (a with statement, no CUDA call) and one raw binding call are of one order of magnitude; the loop's
    # time (100 guards) reported as one operation was 100x and more off
    assert 0.05 < guard["stats"]["median"] / raw["stats"]["median"] < 20, (guard["stats"], raw["stats"])
    # accel's ratio table and pytest-benchmark's own table print the JSON's per-operation median
    line = next(ln for ln in proc.stdout.splitlines() if ln.strip().startswith(rows[0] + " "))
    assert abs(float(line.split()[1]) - guard["stats"]["median"] * 1e9) < 0.06, line
    lines = proc.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith(rows[0] + " "))
    unit = next(re.search(r"\(time in (\w+)\)", ln).group(1) for ln in reversed(lines[:at]) if "(time in " in ln)
    factor = {"ns": 1e9, "us": 1e6, "ms": 1e3, "s": 1.0}[unit]
    shown = float(lines[at].split()[1].replace(",", ""))
    assert abs(shown - guard["stats"]["median"] * factor) <= 1e-3 * shown, lines[at]
