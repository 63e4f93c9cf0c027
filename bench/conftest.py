"""pytest-benchmark suite: every group has a floor (a Python no-op call, a raw binding call) and the
twins, measured in one run; the summary prints each benchmark's ratio to its group's floors.

Run: ``pytest bench/ --benchmark-only`` (installed package, emulated runtime unless ACCEL_BENCH_CUDART).
"""
import importlib.util
import os
import pathlib

import pytest

os.environ["ACCEL_CUDART"] = os.environ.get("ACCEL_BENCH_CUDART", "emu")

_spec = importlib.util.find_spec("accel")
if _spec is None or pathlib.Path(_spec.origin).resolve().parent.parent == pathlib.Path(__file__).resolve().parent.parent:
    pytest.exit("bench: install accel (pip install .) and run `pytest bench/` from the checkout, "
                "not `python -m pytest`", returncode=3)


def _floors(benches):
    return [b for b in benches if "floor" in b.name or "noop" in b.name]


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if not session or not session.benchmarks:
        return
    groups = {}
    for b in session.benchmarks:
        groups.setdefault(b.group, []).append(b)
    tr = terminalreporter
    tr.section("accel ratios (median ns; ratio to each floor in the same group, same run)")
    for group, benches in sorted(groups.items(), key=lambda kv: str(kv[0])):
        floors = _floors(benches)
        tr.write_line(f"[{group}]")
        for b in sorted(benches, key=lambda b: b.stats.median):
            ns = b.stats.median * 1e9 / b.extra_info.get("per", 1)
            unit = b.extra_info.get("unit", "call")
            ratios = "  ".join(f"{b.stats.median / f.stats.median:5.2f}x {f.name.split('[')[0].removeprefix('test_')}"
                               for f in floors if f is not b)
            tr.write_line(f"  {b.name:<48} {ns:9.1f} ns/{unit}  {ratios}")


@pytest.fixture
def bench(benchmark):
    """``bench(fn, *args)``: time ``fn(*args)`` with a fixed inner loop so that ns-scale calls are not
    dominated by the timer (pytest-benchmark would calibrate them down to one call per round)."""
    def run(fn, *args, iterations=2000, rounds=150):
        return benchmark.pedantic(fn, args=args, iterations=iterations, rounds=rounds, warmup_rounds=2)
    return run
