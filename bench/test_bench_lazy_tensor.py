"""Lazy tensors, side by side with torch LTC (TorchScript backend, CPU) when torch is importable:

- tracing ``x = (x * 1.0001 + 0.5).relu()`` on 64x64 float32, per op (150 ops a call, graph dropped);
- a training-loop-shaped step (those 150 ops, then mark_step) on a cached graph, at 64x64 and 1024x1024,
  against the same ops run eagerly in numpy (the floor);
- mark_step of a cached 1e4-op graph against get_graph_hash of it (hashing share of the step), and torch
  LTC's _get_graph_hash of the same graph.

The accel rows run on the selected twin (``accel.backend``); run with ACCEL_BACKEND=python for the
python twin's rows.
"""
import numpy as np
import pytest

import accel
import accel.lazy as L

try:
    import torch
    import torch._lazy
    import torch._lazy.ts_backend
    torch._lazy.ts_backend.init()
except Exception:                 # torch is optional: its rows are skipped
    torch = None

TWIN = accel.backend
ITERS = 50                        # 3 ops each


def _chain(x):
    for _ in range(ITERS):
        x = (x * 1.0001 + 0.5).relu()
    return x


def _eager(x):
    a, b = np.float32(1.0001), np.float32(0.5)
    for _ in range(ITERS):
        x = np.maximum(x * a + b, 0)
    return x


def _input(n):
    return (np.random.default_rng(0).random((n, n)) - 0.5).astype(np.float32)


def _lazy_input(n):
    x = L.tensor(_input(n))
    L.get_tensors_text([x])
    L.mark_step()                 # x holds device data from now on
    return x


def _torch_input(n):
    if torch is None:
        pytest.skip("torch is not importable: no torch LTC rows")
    x = torch.from_numpy(_input(n)).to("lazy")
    torch._lazy.mark_step()
    return x


@pytest.mark.benchmark(group="lazy tensor tracing, per op (64x64 float32)")
def test_trace_accel(bench):
    x = _lazy_input(64)
    bench(_chain, x, iterations=300, rounds=60, per=3 * ITERS)


@pytest.mark.benchmark(group="lazy tensor tracing, per op (64x64 float32)")
def test_trace_torch_ltc(bench):
    x = _torch_input(64)
    bench(_chain, x, iterations=150, rounds=30, per=3 * ITERS)


def _accel_step(x):
    y = _chain(x)
    L.mark_step()
    return y


def _torch_step(x):
    y = _chain(x)
    torch._lazy.mark_step()
    torch._lazy.wait_device_ops()
    return y


def _bench_accel_step(bench, n, iterations, rounds):
    """The accel step row at n x n: checked against the numpy floor once, then timed."""
    x = _lazy_input(n)
    assert np.allclose(_accel_step(x).numpy(), _eager(_input(n)), rtol=1e-5)
    bench(_accel_step, x, iterations=iterations, rounds=rounds)


@pytest.mark.benchmark(group="lazy step, 150 ops + mark_step (64x64)")
def test_floor_eager_numpy_64(bench):
    bench(_eager, _input(64), iterations=300, rounds=60)


@pytest.mark.benchmark(group="lazy step, 150 ops + mark_step (64x64)")
def test_step_accel_64(bench):
    _bench_accel_step(bench, 64, iterations=150, rounds=60)


@pytest.mark.benchmark(group="lazy step, 150 ops + mark_step (64x64)")
def test_step_torch_ltc_64(bench):
    x = _torch_input(64)
    bench(_torch_step, x, iterations=100, rounds=30)


@pytest.mark.benchmark(group="lazy step, 150 ops + mark_step (1024x1024)")
def test_floor_eager_numpy_1024(bench):
    bench(_eager, _input(1024), iterations=3, rounds=8)


@pytest.mark.benchmark(group="lazy step, 150 ops + mark_step (1024x1024)")
def test_step_accel_1024(bench):
    _bench_accel_step(bench, 1024, iterations=3, rounds=8)


@pytest.mark.benchmark(group="lazy step, 150 ops + mark_step (1024x1024)")
def test_step_torch_ltc_1024(bench):
    x = _torch_input(1024)
    bench(_torch_step, x, iterations=3, rounds=8)


def _chain_1e4(x):
    for _ in range(10_000 // 3):
        x = (x * 1.0001 + 0.5).relu()
    return x


@pytest.mark.benchmark(group="lazy mark_step of a cached 1e4-op graph (8x8)")
def test_graph_hash_1e4(bench):
    x = _lazy_input(8)
    y = _chain_1e4(x)
    bench(L.get_graph_hash, [y], iterations=20, rounds=20)


@pytest.mark.benchmark(group="lazy mark_step of a cached 1e4-op graph (8x8)")
def test_graph_hash_1e4_torch_ltc(bench, benchmark):
    # the same graph traced by torch LTC, hashed by its own _get_graph_hash (CollectSyncTensors, post
    # order, device-data dedup), as accel's get_graph_hash row does
    x = _torch_input(8)
    y = _chain_1e4(x)
    benchmark.extra_info["peer"] = "torch LTC"
    assert bench(torch._C._lazy._get_graph_hash, [y], iterations=20, rounds=20) == \
        torch._C._lazy._get_graph_hash([y])


@pytest.mark.benchmark(group="lazy mark_step of a cached 1e4-op graph (8x8)")
def test_mark_step_1e4(bench):
    x = _lazy_input(8)
    _chain_1e4(x)
    L.mark_step()                 # compile once

    def step():
        _chain_1e4(x)
        L.mark_step()
    bench(step, iterations=3, rounds=10)
