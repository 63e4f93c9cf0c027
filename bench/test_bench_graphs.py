"""CUDA graphs on the emulator, both twins: CUDAGraph.replay() against the raw cudaGraphLaunch binding of the
same twin (target, SPEC 2.6b: native replay <= 1.2x the raw launch), a loop of small memsets replayed as one
graph against the same memsets issued one by one, and capture + instantiate per node for 1e2..1e4 nodes.

Launches queue work the stream's worker runs meanwhile; each round ends with a stream synchronize outside
the timed loop (pytest-benchmark's setup), so the queue never grows without bound.
"""
import warnings

import pytest

from accel._native import _cudart as native_rt
from accel._native import _memory as native_mem
from accel._native import _stream as native
from accel._python import _cudart as python_rt
from accel._python import _memory as python_mem
from accel._python import _stream as python

TWINS = {"native": native, "python": python}
RAW = {"native": native_rt, "python": python_rt}
MEM = {"native": native_mem, "python": python_mem}


@pytest.fixture(scope="module", autouse=True)
def loaded():
    native_rt.load()
    python_rt.load()
    native_rt.cudaSetDevice(0)


def _captured(twin, nodes):
    """A CUDAGraph of ``nodes`` memsets of 64 bytes, its stream made current (the caller restores it)."""
    sm = TWINS[twin]
    s = sm.Stream()
    buf = MEM[twin].alloc(64, stream=s)
    s.synchronize()
    g = sm.CUDAGraph()
    prev = sm.current_stream()
    sm.set_stream(s)
    g.capture_begin()
    for _ in range(nodes):
        buf.memset(1, stream=s)
    g.capture_end()
    return g, s, buf, prev


def _pedantic(benchmark, fn, s, iterations=500, rounds=60, per=1):
    """``iterations`` calls of ``fn`` per round, reported per call (``per``); the stream is synchronised
    before each round, outside the timing."""
    benchmark.extra_info["per"] = per
    return benchmark.pedantic(_looped(fn, iterations), setup=s.synchronize, rounds=rounds, warmup_rounds=2)


def _looped(fn, n):
    def run():
        for _ in range(n):
            fn()
    return run


# -- replay vs the raw launch ------------------------------------------------------------------------

@pytest.mark.benchmark(group="graph replay (1 memset node), per launch")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaGraphLaunch(benchmark, twin):
    g, s, buf, prev = _captured(twin, 1)
    launch, x, p = RAW[twin].cudaGraphLaunch, g.raw_cuda_graph_exec(), s.cuda_stream
    try:
        _pedantic(benchmark, lambda: launch(x, p), s, per=500)
    finally:
        TWINS[twin].set_stream(prev)
        s.synchronize()


@pytest.mark.benchmark(group="graph replay (1 memset node), per launch")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_replay(benchmark, twin):
    g, s, buf, prev = _captured(twin, 1)
    try:
        _pedantic(benchmark, g.replay, s, per=500)
    finally:
        TWINS[twin].set_stream(prev)
        s.synchronize()


def _torch_graph():
    """torch.cuda.CUDAGraph of one device-to-device copy (torch's CUDA wheel on the same runtime), or a skip."""
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    if torch.version.cuda is None or not torch.cuda.is_available():
        pytest.skip(f"torch {torch.__version__} has no CUDA here")
    import numpy as np
    src = torch.from_numpy(np.zeros(64, np.uint8)).cuda()     # copies only: the emulator runs no kernels
    dst = torch.empty_like(src)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dst.copy_(src)
    return torch, g, (src, dst)


@pytest.mark.benchmark(group="graph replay (1 node), peers, per launch")
def test_peer_torch_replay(benchmark):
    torch, g, keep = _torch_graph()
    s = torch.cuda.current_stream()
    benchmark.extra_info["per"] = 500
    benchmark.pedantic(_looped(g.replay, 500), setup=s.synchronize, rounds=60, warmup_rounds=2)
    torch.cuda.synchronize()


@pytest.mark.benchmark(group="graph replay (1 node), peers, per launch")
def test_peer_accel_replay(benchmark):
    g, s, buf, prev = _captured("native", 1)
    try:
        _pedantic(benchmark, g.replay, s, per=500)
    finally:
        TWINS["native"].set_stream(prev)
        s.synchronize()


# -- the call overhead alone: an empty graph queues nothing, so no worker runs meanwhile -----------------

def _empty(twin):
    sm = TWINS[twin]
    s = sm.Stream()
    g = sm.CUDAGraph()
    prev = sm.current_stream()
    sm.set_stream(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")    # "The CUDA Graph is empty"
        g.capture_begin()
        g.capture_end()
    return g, s, prev


@pytest.mark.benchmark(group="graph replay (empty graph: call overhead), per launch")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_floor_raw_cudaGraphLaunch_empty(benchmark, twin):
    g, s, prev = _empty(twin)
    launch, x, p = RAW[twin].cudaGraphLaunch, g.raw_cuda_graph_exec(), s.cuda_stream
    try:
        _pedantic(benchmark, lambda: launch(x, p), s, iterations=2000, rounds=100, per=2000)
    finally:
        TWINS[twin].set_stream(prev)


@pytest.mark.benchmark(group="graph replay (empty graph: call overhead), per launch")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_replay_empty(benchmark, twin):
    g, s, prev = _empty(twin)
    try:
        _pedantic(benchmark, g.replay, s, iterations=2000, rounds=100, per=2000)
    finally:
        TWINS[twin].set_stream(prev)


# -- 100 small memsets: one graph vs one by one ---------------------------------------------------------

@pytest.mark.benchmark(group="100 memsets of 64 B: graph vs one by one, per 100")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_memsets_one_by_one(benchmark, twin):
    g, s, buf, prev = _captured(twin, 1)
    raw, ptr, p = RAW[twin].cudaMemsetAsync, buf.ptr, s.cuda_stream

    def hundred():
        for _ in range(100):
            raw(ptr, 1, 64, p)
    try:
        _pedantic(benchmark, hundred, s, iterations=20, per=20)
    finally:
        TWINS[twin].set_stream(prev)
        s.synchronize()


@pytest.mark.benchmark(group="100 memsets of 64 B: graph vs one by one, per 100")
@pytest.mark.parametrize("twin", ["native", "python"])
def test_memsets_replayed_as_one_graph(benchmark, twin):
    g, s, buf, prev = _captured(twin, 100)
    try:
        _pedantic(benchmark, g.replay, s, iterations=20, per=20)
    finally:
        TWINS[twin].set_stream(prev)
        s.synchronize()


# -- capture + instantiate grows linearly ------------------------------------------------------------

@pytest.mark.benchmark(group="capture + instantiate + reset, per node")
@pytest.mark.parametrize("nodes", [100, 1000, 10000])
def test_capture_instantiate_per_node(benchmark, nodes):
    sm, rt = native, native_rt
    s = sm.Stream()
    buf = native_mem.alloc(64, stream=s)
    s.synchronize()
    ptr, p = buf.ptr, s.cuda_stream
    memset = rt.cudaMemsetAsync
    g = sm.CUDAGraph()

    def capture():
        g.capture_begin()
        for _ in range(nodes):
            memset(ptr, 1, 64, p)
        g.capture_end()
        g.reset()
    prev = sm.current_stream()
    sm.set_stream(s)
    benchmark.extra_info["per"] = nodes
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            benchmark.pedantic(capture, rounds=max(3, 30000 // nodes), warmup_rounds=1)
    finally:
        sm.set_stream(prev)
