"""First-seen lazy steps (issue 36): a 300-op chain ``x = (x * 1.0001 + 0.5).relu()`` over an (n, 32) float32
tensor whose n changes at every step, so that every ``mark_step`` meets a graph hash it has not seen (LTC
compiles each: UncachedCompile), timed one step per round (tracing, hashing, the program, its run) and
reported per op; beside it the same step with the backend's templates off (the code of each new graph
generated and compiled, as before), the same step on a cached graph (one n), the tracing alone (the floor:
what a first-seen step costs at best), and torch LTC (TorchScript backend, CPU) on the same program when torch is
importable (its rows are skipped without it).

The accel rows run on the selected twin (``accel.backend``); ``ACCEL_BACKEND=python pytest
bench/test_bench_lazy_firstseen.py --benchmark-only`` gives the python twin's.
"""
import itertools

import numpy as np
import pytest

import accel
import accel.lazy as L
from accel.lazy import metrics
from accel.lazy.backend import NumpyBackend

try:
    import torch
    import torch._lazy
    import torch._lazy.ts_backend
    import torch._lazy.metrics
    torch._lazy.ts_backend.init()
except Exception:                 # torch is optional: its rows are skipped
    torch = None

OPS = 300
GROUP_NEW = "lazy first-seen step, 300 ops over (n, 32) float32, n new at every step, per op"
GROUP_CACHED = "lazy cached step, 300 ops over (64, 32) float32, per op"
ROUNDS = 30
_sizes = itertools.count(33)      # every round's n is one no earlier step of this process used


def _chain(x):
    for _ in range(OPS // 3):
        x = (x * 1.0001 + 0.5).relu()
    return x


def _input(n):
    return (np.random.default_rng(n).random((n, 32)) - 0.5).astype(np.float32)


def _eager(a):
    a1, b = np.float32(1.0001), np.float32(0.5)
    for _ in range(OPS // 3):
        a = np.maximum(a * a1 + b, 0)
    return a


def _accel_input(n):
    x = L.tensor(_input(n))
    L.mark_step()                 # x holds device data from now on
    return x


def _accel_step(x):
    y = _chain(x)
    L.mark_step()
    return y


def _torch_input(n):
    x = torch.from_numpy(_input(n)).to("lazy")
    torch._lazy.mark_step()
    return x


def _torch_step(x):
    y = _chain(x)
    torch._lazy.mark_step()
    torch._lazy.wait_device_ops()
    return y


def _new_accel():
    return (_accel_input(next(_sizes)),), {}


def _new_torch():
    return (_torch_input(next(_sizes)),), {}


def _per_op(benchmark, **info):
    benchmark.extra_info.update(per=OPS, unit="op", **info)


def _need_torch():
    if torch is None:
        pytest.skip("torch is not importable: no torch LTC rows")


@pytest.mark.benchmark(group=GROUP_NEW)
def test_floor_trace_only(benchmark):
    """Tracing the 300 ops alone (no mark_step; the graph is dropped), on a new n each round."""
    _per_op(benchmark, twin=accel.backend)
    benchmark.pedantic(_chain, setup=_new_accel, rounds=ROUNDS, warmup_rounds=2)


@pytest.mark.benchmark(group=GROUP_NEW)
def test_first_seen_accel(benchmark):
    _per_op(benchmark, twin=accel.backend)
    x = _accel_input(7)
    assert np.array_equal(_accel_step(x).numpy(), _eager(_input(7)))
    before = metrics.counter_value("UncachedCompile") or 0
    benchmark.pedantic(_accel_step, setup=_new_accel, rounds=ROUNDS, warmup_rounds=2)
    # every timed step met a new graph hash, as LTC counts it
    assert (metrics.counter_value("UncachedCompile") or 0) - before == ROUNDS + 2


@pytest.mark.benchmark(group=GROUP_NEW)
def test_first_seen_accel_generated(benchmark):
    """The same step with the numpy backend's templates off (NumpyBackend(max_templates=0)): the code of
    every new graph generated and compiled, as before issue 36."""
    _per_op(benchmark, twin=accel.backend)
    prev = L.set_backend(NumpyBackend(max_templates=0))
    try:
        benchmark.pedantic(_accel_step, setup=_new_accel, rounds=ROUNDS, warmup_rounds=2)
    finally:
        L.set_backend(prev)


@pytest.mark.benchmark(group=GROUP_NEW)
def test_first_seen_torch_ltc(benchmark):
    _need_torch()
    _per_op(benchmark, peer="torch LTC")
    before = torch._lazy.metrics.counter_value("UncachedCompile") or 0
    benchmark.pedantic(_torch_step, setup=_new_torch, rounds=ROUNDS, warmup_rounds=2)
    assert (torch._lazy.metrics.counter_value("UncachedCompile") or 0) - before == ROUNDS + 2


@pytest.mark.benchmark(group=GROUP_CACHED)
def test_cached_accel(benchmark):
    _per_op(benchmark, twin=accel.backend)
    x = _accel_input(64)
    _accel_step(x)                # compiled here
    before = metrics.counter_value("UncachedCompile") or 0
    benchmark.pedantic(_accel_step, args=(x,), rounds=ROUNDS * 4, warmup_rounds=2)
    assert (metrics.counter_value("UncachedCompile") or 0) == before


@pytest.mark.benchmark(group=GROUP_CACHED)
def test_cached_torch_ltc(benchmark):
    _need_torch()
    _per_op(benchmark, peer="torch LTC")
    x = _torch_input(64)
    _torch_step(x)
    benchmark.pedantic(_torch_step, args=(x,), rounds=ROUNDS * 4, warmup_rounds=2)
