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

if os.environ["ACCEL_CUDART"] == "emu":
    # accel and the peers of bench/test_bench_peers.py (torch.cuda, cuda.core) on one emulated runtime:
    # the stand-in libraries, loaded before anything imports a peer (absent in a -Dnative=false build).
    from accel import emu

    if os.path.exists(emu.cudart_path()):
        emu.activate()


def _param(bench):
    return bench.name.partition("[")[2].rstrip("]")


def _floors(benches, bench):
    """The floors a benchmark is compared with: unparametrized ones and those of its own twin."""
    own = _param(bench)
    return [f for f in benches if f is not bench and ("floor" in f.name or "noop" in f.name)
            and _param(f) in ("", own)]


def _per_op(bench):
    return bench.stats.median / bench.extra_info.get("per", 1)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if not session or not session.benchmarks:
        return
    groups = {}
    for b in session.benchmarks:
        groups.setdefault(b.group, []).append(b)
    tr = terminalreporter
    tr.section("accel ratios (median; ratio to each floor of the same group and twin, same run)")
    for group, benches in sorted(groups.items(), key=lambda kv: str(kv[0])):
        tr.write_line(f"[{group}]")
        for b in sorted(benches, key=_per_op):
            unit = b.extra_info.get("unit", "call")
            ratios = "  ".join(f"{_per_op(b) / _per_op(f):5.2f}x {f.name.removeprefix('test_')}"
                               for f in _floors(benches, b))
            ns = _per_op(b) * 1e9
            tr.write_line(f"  {b.name:<48} {ns:9.1f} ns/{unit}  {ratios}")
        _peer_ratios(tr, benches)
    from accel import _lib
    lib = _lib.cudart()
    tr.write_line(f"runtime: {lib.path}" + (" (emulated: accel's stand-in libraries)" if lib.emulated else ""))


def _peer_ratios(tr, benches):
    """``accel / peer`` for each peer row (extra_info["peer"]) against the group's accel rows."""
    peer_rows = [b for b in benches if b.extra_info.get("peer")]
    ours = [b for b in benches if not b.extra_info.get("peer") and "floor" not in b.name and "noop" not in b.name]
    for p in peer_rows:
        ratios = "  ".join(f"{_per_op(a) / _per_op(p):5.2f}x {a.name.removeprefix('test_')}" for a in ours)
        if ratios:
            tr.write_line(f"    accel / {p.extra_info['peer']} ({p.name.removeprefix('test_')}): {ratios}")


@pytest.fixture
def bench(benchmark):
    """``bench(fn, *args, per=1)``: time ``fn(*args)`` with a fixed inner loop so that ns-scale calls are
    not dominated by the timer (pytest-benchmark would calibrate them down to one call per round).
    ``per`` = operations done by one call (a loop inside fn); results are reported per operation."""
    def run(fn, *args, iterations=2000, rounds=150, per=1):
        # per: operations done by one call of fn (an inner loop), reported as ns per operation
        benchmark.extra_info["per"] = per
        return benchmark.pedantic(fn, args=args, iterations=max(1, iterations // per), rounds=rounds,
                                  warmup_rounds=2)
    return run
