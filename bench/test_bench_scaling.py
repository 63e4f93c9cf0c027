"""Costs that must not grow with the work already done (issue 22), each at several sizes, reported per unit
with the ratio of the largest size to the smallest (printed under "accel scaling" in the summary):

- ``alloc(4096)`` + ``free()`` and the raw ``cudaMallocAsync`` + ``cudaFreeAsync`` pair with N other
  buffers live (both twins; target: ratio <= 1.5 from 0 to 1e5);
- lazy tracing ``x = x + 1.0``, a chain of N ops, with the cyclic GC on (target: ratio <= 1.3 from 1e3 to
  3e5) and, for reference, off; and its floor: plain Python allocating, per op, blocks of the sizes that a
  traced op leaves live (measured with tracemalloc), kept and freed the same way;
- ``post_order`` on an N-node DAG (both twins; target: ratio <= 2 from 1e4 to 1e6), the same keeping the
  result (its list is freed outside the timing), ``graph_hash`` and ``graph_size`` (the walk alone) for
  reference, and the floor of any post_order: a new list of the same N nodes (``list`` of its result);
- for a series with a floor, the summary also shows its cost above the floor at each size and their ratio;
- the first (uncached) ``mark_step`` of an N-op chain, per op, against a cached one.

The lazy tensor rows run on the selected twin (``accel.backend``): run with ACCEL_BACKEND=python for the
python twin's.  The default run stops at 1e5 ops / 1e5 nodes; ``ACCEL_BENCH_SCALING=full`` adds 3e5 ops
and 1e6 nodes (about a minute more; the python twin several).
"""
import collections
import gc
import importlib.util
import os
import pathlib
import sys
import tracemalloc

import numpy as np
import pytest

import accel
import accel.lazy as L
from accel._native import _cudart as native_rt
from accel._native import _memory as native_mem
from accel._python import _cudart as python_rt
from accel._python import _memory as python_mem
from accel._python import _ir as python_ir

try:
    from accel._native import _ir as native_ir
except ImportError:          # a -Dnative=false install: python only
    native_ir = None

# bench/ runs with --import-mode=importlib: the sibling module is loaded by path
_spec = importlib.util.spec_from_file_location("bench_lazy", pathlib.Path(__file__).with_name("test_bench_lazy.py"))
_bench_lazy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench_lazy)

FULL = os.environ.get("ACCEL_BENCH_SCALING") == "full"
LIVE = [0, 1_000, 10_000, 100_000]
OPS = [1_000, 10_000, 100_000] + ([300_000] if FULL else [])
NODES = [10_000, 100_000] + ([1_000_000] if FULL else [])
FIRST_STEP_OPS = [1_000, 10_000]
MEM = {"native": native_mem, "python": python_mem}
RT = {"native": native_rt, "python": python_rt}
IR = {"python": python_ir} if native_ir is None else {"native": native_ir, "python": python_ir}
LOOP = 100


FLOOR_TRACE = "floor: the same live blocks per op, plain Python"
FLOOR_WALK = "floor: a list of the same nodes (list(post_order result))"


def _series(benchmark, series, twin, scale, unit, per, target=None, floor=None):
    benchmark.extra_info.update(series=series, twin=twin, scale=scale, unit=unit, per=per)
    if target:
        benchmark.extra_info["target"] = target
    if floor:                   # the summary also shows the cost above that series (same twin and size)
        benchmark.extra_info["floor"] = floor


# -- allocation with N buffers live ----------------------------------------------------------------------

class _Live:
    """Raw pool allocations held live (``ensure(n)``), all freed at the end.  Before each measurement the
    pool holds one free block, the one at the lowest address of all (the worst case for an address-sorted
    table), which the loops then reuse."""

    def __init__(self):
        self.ptrs = []
        self.pool = native_rt.cudaDeviceGetDefaultMemPool(0)

    def ensure(self, n, free_blocks=0):
        """n buffers live and (apart from the lowest block's) ``free_blocks`` free 64 KiB blocks in the pool."""
        native_rt.cudaMemPoolTrimTo(self.pool, 0)
        while len(self.ptrs) < n + 1:
            self.ptrs.append(native_rt.cudaMallocAsync(4096, 0))
        while len(self.ptrs) > n + 1:
            native_rt.cudaFreeAsync(self.ptrs.pop(), 0)
        native_rt.cudaStreamSynchronize(0)
        native_rt.cudaMemPoolTrimTo(self.pool, 0)
        if free_blocks:
            big = [native_rt.cudaMallocAsync(65536, 0) for _ in range(free_blocks)]
            for p in big:
                native_rt.cudaFreeAsync(p, 0)
        low = min(self.ptrs)
        self.ptrs.remove(low)
        native_rt.cudaFreeAsync(low, 0)
        native_rt.cudaStreamSynchronize(0)
        self.ptrs.append(native_rt.cudaMallocAsync(4096, 0))   # takes the lowest block: live again, n + 1
        native_rt.cudaFreeAsync(self.ptrs.pop(), 0)            # ... and back: the pool's 4 KiB block
        native_rt.cudaStreamSynchronize(0)


@pytest.fixture(scope="module")
def live():
    native_rt.load()
    python_rt.load()
    native_rt.cudaSetDevice(0)
    MEM["native"].alloc(4096).free()     # accel's pool settings (release threshold: keep everything)
    held = _Live()
    yield held
    for p in held.ptrs:
        native_rt.cudaFreeAsync(p, 0)
    native_rt.cudaStreamSynchronize(0)
    native_rt.cudaMemPoolTrimTo(held.pool, 0)


def _alloc_free(alloc):
    for _ in range(LOOP):
        alloc(4096).free()


def _raw_pair(rt):
    m, f = rt.cudaMallocAsync, rt.cudaFreeAsync
    for _ in range(LOOP):
        f(m(4096, 0), 0)


GROUP_ALLOC = "scaling: alloc(4096) + free() with N buffers live / N free blocks in the pool"


@pytest.mark.benchmark(group=GROUP_ALLOC)
@pytest.mark.parametrize("n", LIVE)
@pytest.mark.parametrize("twin", ["native", "python"])
def test_alloc_free_with_live(benchmark, live, twin, n):
    live.ensure(n)
    _series(benchmark, "alloc(4096)+free(), N live", twin, n, "op", LOOP, ("<=", 1.5))
    benchmark.pedantic(_alloc_free, args=(MEM[twin].alloc,), iterations=20, rounds=30, warmup_rounds=2)


@pytest.mark.benchmark(group=GROUP_ALLOC)
@pytest.mark.parametrize("n", LIVE)
@pytest.mark.parametrize("twin", ["native", "python"])
def test_raw_pair_with_live(benchmark, live, twin, n):
    live.ensure(n)
    _series(benchmark, "cudaMallocAsync+cudaFreeAsync, N live", twin, n, "op", LOOP)
    benchmark.pedantic(_raw_pair, args=(RT[twin],), iterations=20, rounds=30, warmup_rounds=2)


@pytest.mark.benchmark(group=GROUP_ALLOC)
@pytest.mark.parametrize("n", LIVE)
def test_raw_pair_with_free_blocks(benchmark, live, n):
    live.ensure(0, free_blocks=n)
    _series(benchmark, "cudaMallocAsync+cudaFreeAsync, N free 64 KiB blocks", "native", n, "op", LOOP)
    benchmark.pedantic(_raw_pair, args=(RT["native"],), iterations=20, rounds=30, warmup_rounds=2)


# -- lazy tracing a chain of N ops ------------------------------------------------------------------------

def _trace(holder, n):
    x = holder[0]
    for _ in range(n):
        x = x + 1.0
    holder[0] = x               # the chain lives until the next round's setup frees it (untimed)


def _trace_rounds(n):
    return max(5, min(15, 300_000 // n))      # a median of 5 at least: the machine may be shared


def _run_trace(benchmark, n, gc_on):
    holder = [None]

    def setup():
        holder[0] = None
        gc.collect()
        holder[0] = L.tensor(np.zeros(4, np.float32))
        return (holder, n), {}

    was = gc.isenabled()
    (gc.enable if gc_on else gc.disable)()
    try:
        benchmark.pedantic(_trace, setup=setup, iterations=1, rounds=_trace_rounds(n), warmup_rounds=1)
    finally:
        holder[0] = None
        (gc.enable if was else gc.disable)()


@pytest.mark.benchmark(group="scaling: lazy tracing x = x + 1.0, a chain of N ops")
@pytest.mark.parametrize("n", OPS)
def test_trace_chain_gc_on(benchmark, n):
    _series(benchmark, "tracing, GC on", accel.backend, n, "op", n, ("<=", 1.3), FLOOR_TRACE)
    _run_trace(benchmark, n, True)


@pytest.mark.benchmark(group="scaling: lazy tracing x = x + 1.0, a chain of N ops")
@pytest.mark.parametrize("n", OPS)
def test_trace_chain_gc_off(benchmark, n):
    _series(benchmark, "tracing, GC off", accel.backend, n, "op", n, floor=FLOOR_TRACE)
    _run_trace(benchmark, n, False)


def _op_blocks():
    """The sizes of the memory blocks one traced ``x = x + 1.0`` leaves live (tracemalloc over 1000 ops):
    what the floor below allocates per op."""
    x = L.tensor(np.zeros(4, np.float32)) + 1.0
    gc.collect()
    tracemalloc.start()
    try:
        before = collections.Counter(t.size for t in tracemalloc.take_snapshot().traces)
        for _ in range(1000):
            x = x + 1.0
        after = collections.Counter(t.size for t in tracemalloc.take_snapshot().traces)
    finally:
        tracemalloc.stop()
    blocks = []
    for size, count in sorted(after.items()):
        blocks += [size] * round((count - before.get(size, 0)) / 1000)
    return blocks


def _floor_parts(blocks):
    """One op of the floor: a tuple (the chain's link, as big as the smallest block) holding the previous
    link and one bytes object per other block, each of that block's size."""
    link, rest = blocks[0], blocks[1:]
    items = max(1 + len(rest), (link - _TUPLE_BASE) // 8)
    return [b - _BYTES_BASE for b in rest], (None,) * (items - 1 - len(rest))


_TUPLE_BASE = sys.getsizeof(())             # tuple: base + 8 per item (the GC header included)
_BYTES_BASE = sys.getsizeof(b"")            # bytes: base + 1 per byte


def _floor_trace(holder, n, sizes, pad):
    x = holder[0]
    for _ in range(n):
        x = (x, *map(bytes, sizes), *pad)
    holder[0] = x


@pytest.mark.benchmark(group="scaling: lazy tracing x = x + 1.0, a chain of N ops")
@pytest.mark.parametrize("n", OPS)
def test_trace_floor(benchmark, n):
    """The floor of tracing's growth: plain Python allocating, per op, blocks of the sizes a traced op leaves
    live (the same bytes and count, kept in a chain and freed between rounds as the traced chain is), with
    the GC off (the chain's links are tuples, which the GC would rescan).  Fresh memory costs page faults
    and cache misses that no allocation avoids; tracing's own cost is the part above this row."""
    blocks = _op_blocks()
    sizes, pad = _floor_parts(blocks)
    _series(benchmark, FLOOR_TRACE, accel.backend, n, "op", n)
    benchmark.extra_info["blocks"] = blocks
    holder = [None]

    def setup():
        holder[0] = None
        gc.collect()
        return (holder, n, sizes, pad), {}

    was = gc.isenabled()
    gc.disable()
    try:
        benchmark.pedantic(_floor_trace, setup=setup, iterations=1, rounds=_trace_rounds(n), warmup_rounds=1)
    finally:
        holder[0] = None
        (gc.enable if was else gc.disable)()


# -- first (uncached) and cached mark_step of an N-op chain -----------------------------------------------

def _run_step(benchmark, n, cached):
    holder = [None]

    def setup():
        holder[0] = None
        gc.collect()
        x = L.tensor(np.zeros(4, np.float32))
        for _ in range(n):
            x = x + 1.0
        holder[0] = x
        if not cached:
            L.computation_cache().clear()
        return (), {}

    try:
        if cached:              # compiled once, outside the timing
            setup()
            L.mark_step()
        benchmark.pedantic(L.mark_step, setup=setup, iterations=1, rounds=max(3, 20_000 // n), warmup_rounds=0)
    finally:
        holder[0] = None


@pytest.mark.benchmark(group="scaling: mark_step of a chain of N ops")
@pytest.mark.parametrize("n", FIRST_STEP_OPS)
def test_first_mark_step(benchmark, n):
    _series(benchmark, "first (uncached) mark_step", accel.backend, n, "op", n)
    _run_step(benchmark, n, False)


@pytest.mark.benchmark(group="scaling: mark_step of a chain of N ops")
@pytest.mark.parametrize("n", FIRST_STEP_OPS)
def test_cached_mark_step(benchmark, n):
    _series(benchmark, "cached mark_step", accel.backend, n, "op", n)
    _run_step(benchmark, n, True)


# -- post_order on an N-node DAG ---------------------------------------------------------------------------

def _dag(ir, n, seed=0):
    """test_bench_lazy's DAG (every node on the previous one and a near or random earlier one, a tenth device
    data with shared handles) at size n."""
    return _bench_lazy._dag(ir, n, seed)


_dags = {}


def _the_dag(twin, n):
    """One DAG at a time (the largest are hundreds of MB): built on first use, replaced by the next."""
    key = (twin, n)
    if key not in _dags:
        _dags.clear()
        gc.collect()
        root = _dag(IR[twin], n)
        _dags[key] = (root, IR[twin].graph_size([root]))
    return _dags[key]


def _walk_rounds(twin, n):
    return max(3, min(30, (3_000_000 if twin == "native" else 300_000) // n))


def _keep(fn, holder, root):
    holder.append(fn([root]))


WALKS = {"post_order": ("post_order", ("<=", 2.0)), "post_order_kept": ("post_order, list freed untimed", None),
         "graph_hash": ("graph_hash", None), "graph_size": ("graph_size (the walk alone, no list)", None),
         "floor_list": (FLOOR_WALK, None)}


@pytest.mark.benchmark(group="scaling: post_order on an N-node DAG")
@pytest.mark.parametrize("walk", list(WALKS))       # walk varies fastest: one DAG serves all its rows
@pytest.mark.parametrize("twin", list(IR))
@pytest.mark.parametrize("n", NODES)
def test_walk(benchmark, walk, twin, n):
    root, size = _the_dag(twin, n)
    ir = IR[twin]
    series, target = WALKS[walk]
    _series(benchmark, series, twin, n, "node", size, target, FLOOR_WALK if walk.startswith("post_order") else None)
    rounds = _walk_rounds(twin, n)
    if walk == "floor_list":
        # The least any post_order returning these N nodes pays: a new list of them (one reference each,
        # in post order), the previous round's list freed inside the timing as post_order's is.
        nodes = ir.post_order([root])
        benchmark.pedantic(list, args=(nodes,), iterations=1, rounds=rounds, warmup_rounds=1)
        del nodes
    elif walk == "post_order_kept":
        holder = []

        def setup():
            holder.clear()
            return (ir.post_order, holder, root), {}

        benchmark.pedantic(_keep, setup=setup, iterations=1, rounds=rounds, warmup_rounds=1)
        holder.clear()
    else:
        benchmark.pedantic(getattr(ir, walk), args=([root],), iterations=1, rounds=rounds, warmup_rounds=1)
