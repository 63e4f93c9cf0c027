"""CUDA graphs (issue 20): stream capture and replay through CUDAGraph on both twins, the ``graph`` context
manager, and the emulator's capture model (modes, fork/join, graph memory, prohibited calls, faults)."""
import copy
import ctypes
import gc
import importlib.util
import os
import pathlib
import pickle
import threading
import warnings

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _graph_common as _gc
from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
mem, rt, emu = _fx.mem, _fx.rt, _fx.emu
sm, live = _fx.sm, _fx.live          # the graph tests' stream module and live-handle counts
HOSTFN = _fx.HOSTFN

pytestmark = pytest.mark.emu_only

UNSUPPORTED, INVALIDATED, UNJOINED, CAPTURED_EVENT = 900, 901, 904, 907
N = 256


def _capture(sm, g, s, body, **kw):
    """capture_begin / body / capture_end on ``s`` made current (restored after)."""
    prev = sm.current_stream(s.device_index)
    sm.set_stream(s)
    try:
        g.capture_begin(**kw)
        body()
        g.capture_end()
    finally:
        sm.set_stream(prev)


def _pipeline(sm, mem, s):
    """Host -> device -> device -> host copies and a memset tail, on static buffers."""
    hin, hout = np.zeros(N, np.uint8), np.zeros(N, np.uint8)
    a, b = mem.alloc(N, stream=s), mem.alloc(N, stream=s)
    s.synchronize()

    def body():
        a.copy_from_host(hin, stream=s)
        b.copy_from(a, stream=s)
        b.copy_to_host(hout, stream=s)
    return hin, hout, (a, b), body


def test_replay_copies_with_fresh_input_bytes(sm, mem):
    s = sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    assert not hout.any()                          # captured, not run
    for k in range(5):
        hin[:] = (np.arange(N) * (k + 3)) % 251
        g.replay()
        sm.current_stream().synchronize()
        assert (hout == hin).all()


def test_replay_runs_in_order_on_the_current_stream(sm, mem):
    s, other = sm.Stream(), sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    hin[:] = 7
    with sm.stream(other):
        g.replay()
        assert sm.current_stream() == other
    other.synchronize()
    assert (hout == 7).all()


def test_memset_and_host_function_nodes(sm, mem, rt):
    s = sm.Stream()
    calls = []
    fn = HOSTFN(lambda arg: calls.append(arg))
    buf = mem.alloc(N, stream=s)
    hout = np.zeros(N, np.uint8)
    s.synchronize()

    def body():
        buf.memset(0x5A, stream=s)
        rt.cudaLaunchHostFunc(s.cuda_stream, ctypes.cast(fn, ctypes.c_void_p).value, 11)
        buf.copy_to_host(hout, stream=s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    assert calls == []
    for k in range(3):
        hout[:] = 0
        with sm.stream(s):
            g.replay()
        s.synchronize()
        assert (hout == 0x5A).all() and calls == [11] * (k + 1)


def test_fork_join_over_three_streams(sm, mem, rt):
    s0, s1, s2 = sm.Stream(), sm.Stream(), sm.Stream()
    order = []
    fns = [HOSTFN(lambda arg: order.append(arg)) for _ in range(3)]
    ptr = [ctypes.cast(f, ctypes.c_void_p).value for f in fns]
    hin, hout = np.zeros(2 * N, np.uint8), np.zeros(2 * N, np.uint8)
    a, b = mem.alloc(2 * N, stream=s0), mem.alloc(2 * N, stream=s0)
    s0.synchronize()
    e0, e1, e2 = sm.Event(), sm.Event(), sm.Event()

    def body():
        a.copy_from_host(hin, stream=s0)
        e0.record(s0)
        s1.wait_event(e0)                          # fork
        s2.wait_event(e0)
        rt.cudaMemcpyAsync(b.ptr, a.ptr, N, 3, s1.cuda_stream)
        rt.cudaLaunchHostFunc(s1.cuda_stream, ptr[1], 1)
        rt.cudaMemcpyAsync(b.ptr + N, a.ptr + N, N, 3, s2.cuda_stream)
        rt.cudaLaunchHostFunc(s2.cuda_stream, ptr[2], 2)
        assert rt.cudaStreamIsCapturing(s1.cuda_stream) == 1
        e1.record(s1)
        e2.record(s2)
        s0.wait_event(e1)                          # join
        s0.wait_stream(s2)
        rt.cudaLaunchHostFunc(s0.cuda_stream, ptr[0], 10)
        b.copy_to_host(hout, stream=s0)
    g = sm.CUDAGraph()
    _capture(sm, g, s0, body)
    assert rt.cudaStreamIsCapturing(s1.cuda_stream) == 0    # the capture ended for the forked streams too
    for k in range(3):
        order.clear()
        hin[:] = np.arange(2 * N) % (k + 5)
        with sm.stream(s0):
            g.replay()
        s0.synchronize()
        assert (hout == hin).all()
        assert sorted(order[:2]) == [1, 2] and order[2] == 10


def test_unjoined_fork_fails_capture_end_and_leaks_nothing(sm, mem, rt, live):
    s0, s1 = sm.Stream(), sm.Stream()
    buf = mem.alloc(N, stream=s0)
    s0.synchronize()
    before = live()
    e = sm.Event()
    g = sm.CUDAGraph()
    sm.set_stream(s0)
    g.capture_begin()
    e.record(s0)
    s1.wait_event(e)
    buf.memset(1, stream=s1)
    with pytest.raises(CudaError) as exc:
        g.capture_end()
    assert exc.value.code == UNJOINED and "never joined" in str(exc.value)
    assert rt.cudaStreamIsCapturing(s1.cuda_stream) == 0 and sm.current_stream() == s0
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    assert live() == before


def test_alloc_inside_capture_keeps_its_address_until_reset(sm, mem, emu, live):
    s = sm.Stream()
    hout = np.zeros(N, np.uint8)
    before = live()
    g = sm.CUDAGraph()
    held = []

    def body():
        b = mem.alloc(N, stream=s)
        held.append(b)
        b.memset(0x33, stream=s)
        b.copy_to_host(hout, stream=s)
    _capture(sm, g, s, body)
    ptr = held[0].ptr
    assert live()[3] == before[3] + 1
    for _ in range(3):
        hout[:] = 0
        with sm.stream(s):
            g.replay()
        s.synchronize()
        assert (hout == 0x33).all() and held[0].ptr == ptr
    g.reset()
    del held[:]
    s.synchronize()
    assert live() == before


def test_illegal_calls_invalidate_the_capture(sm, mem, twin, live):
    s = sm.Stream()
    before = live()
    dev0 = twin.mod("_device").current_device()
    g = sm.CUDAGraph()
    sm.set_stream(s)
    g.capture_begin()
    with pytest.raises(CudaError) as exc:
        s.synchronize()
    assert exc.value.code == UNSUPPORTED and "not permitted while a CUDA graph is being captured" in str(exc.value)
    assert sm.current_stream() == s and twin.mod("_device").current_device() == dev0
    with pytest.raises(CudaError) as exc:
        g.capture_end()
    assert exc.value.code == INVALIDATED
    assert live() == before
    g.reset()
    _capture(sm, g, s, lambda: None)               # the instance captures again after reset()


@pytest.mark.parametrize("call", ["stream_query", "event_query", "device_sync", "other_stream_sync", "alloc"])
def test_unsafe_calls_in_global_mode(sm, mem, call, live):
    s, other = sm.Stream(), sm.Stream()
    ev = sm.Event()
    ev.record(other)
    other.synchronize()
    before = live()
    ops = {"stream_query": s.query, "event_query": ev.query, "device_sync": cuda.synchronize,
           "other_stream_sync": other.synchronize,
           "alloc": lambda: cuda.cudart().cudaMalloc(16)}
    g = sm.CUDAGraph()
    sm.set_stream(s)
    g.capture_begin()
    with pytest.raises(CudaError) as exc:
        ops[call]()
    assert exc.value.code == UNSUPPORTED
    with pytest.raises(CudaError) as exc:
        g.capture_end()
    assert exc.value.code == INVALIDATED
    assert live() == before


def test_relaxed_mode_allows_unsafe_calls_but_not_on_the_capturing_stream(sm, mem):
    s, other = sm.Stream(), sm.Stream()
    g = sm.CUDAGraph()
    sm.set_stream(s)
    g.capture_begin(capture_error_mode="relaxed")
    other.synchronize()
    assert other.query()
    cuda.cudart().cudaFree(cuda.cudart().cudaMalloc(16))
    g.capture_end()
    g2 = sm.CUDAGraph()
    g2.capture_begin(capture_error_mode="relaxed")
    with pytest.raises(CudaError) as exc:
        s.query()
    assert exc.value.code == UNSUPPORTED
    with pytest.raises(CudaError):
        g2.capture_end()


def test_capture_modes_across_threads(sm):
    s = sm.Stream()
    other = sm.Stream()
    results = {}

    def query_from_thread():
        try:
            results["q"] = other.query()
        except CudaError as e:
            results["q"] = e.code

    for mode, expected, end in (("thread_local", True, None), ("global", UNSUPPORTED, INVALIDATED)):
        g = sm.CUDAGraph()
        sm.set_stream(s)
        g.capture_begin(capture_error_mode=mode)
        t = threading.Thread(target=query_from_thread)
        t.start()
        t.join()
        assert results["q"] == expected, mode
        if end is None:
            g.capture_end()
        else:
            with pytest.raises(CudaError) as exc:
                g.capture_end()
            assert exc.value.code == end


def test_capture_end_from_another_thread_is_refused_in_global_mode(sm):
    s = sm.Stream()
    g = sm.CUDAGraph()
    sm.set_stream(s)
    g.capture_begin()
    err = []

    def end():
        sm.set_stream(s)
        try:
            g.capture_end()
        except CudaError as e:
            err.append(e.code)
    t = threading.Thread(target=end)
    t.start()
    t.join()
    assert err == [908]
    g.capture_end()                                # still capturing: the owner ends it


def test_torch_errors_and_state_checks(sm):
    g = sm.CUDAGraph()
    with pytest.raises(RuntimeError, match=r"^Called CUDAGraph::replay without a preceding successful capture\.$"):
        g.replay()
    with pytest.raises(RuntimeError, match=r"^Called CUDAGraph::pool\(\) without a preceding successful capture\.$"):
        g.pool()
    with pytest.raises(RuntimeError, match="capture_end\\(\\) called before capture_begin"):
        g.capture_end()
    with pytest.raises(RuntimeError, match="must be captured on a non-default stream"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="Unknown capture error mode. Expected `global`, `thread_local`, or "
                                           "`relaxed`, got local"):
        g.capture_begin(capture_error_mode="local")
    with pytest.raises(TypeError, match="pool must be None or a memory pool id"):
        g.capture_begin(pool=5)
    with pytest.raises(RuntimeError, match="unless CUDAGraph was initialized with keep_graph=true"):
        g.raw_cuda_graph()
    with pytest.raises(RuntimeError, match="until instantiate\\(\\) has been called"):
        g.raw_cuda_graph_exec()
    s, other = sm.Stream(), sm.Stream()
    sm.set_stream(s)
    g.capture_begin()
    sm.set_stream(other)
    with pytest.raises(RuntimeError, match="^Capture must end on the same stream it began on.$"):
        g.capture_end()
    sm.set_stream(s)
    with pytest.warns(UserWarning, match="The CUDA Graph is empty"):
        g.capture_end()
    assert g.pool()[0] > 0 and g.pool()[1] == 0 and isinstance(g.raw_cuda_graph_exec(), int)
    with pytest.raises(RuntimeError, match="already owns a captured graph"):
        g.capture_begin()
    with pytest.raises(RuntimeError, match="only when keep_graph=true"):
        g.instantiate()
    g.reset()
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()


def test_keep_graph_raw_handles_instantiate_and_debug_dump(sm, mem, rt, tmp_path):
    s = sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph(keep_graph=True)
    _capture(sm, g, s, body)
    raw = g.raw_cuda_graph()
    assert rt.cudaGraphGetNodes(raw, 0, 0) == 3
    with pytest.raises(RuntimeError):
        g.raw_cuda_graph_exec()
    hin[:] = 9
    with sm.stream(s):
        g.replay()                                 # instantiates first
    s.synchronize()
    assert (hout == 9).all()
    x = g.raw_cuda_graph_exec()
    g.instantiate()                                # keep_graph: again
    assert g.raw_cuda_graph_exec() != x
    path = tmp_path / "g.dot"
    with pytest.warns(UserWarning, match="cudaGraphDebugDotPrint"):
        g.debug_dump(str(path))
    dot = path.read_text()
    assert dot.startswith("digraph dot {") and dot.count("MEMCPY") == 3 and dot.count("->") == 2
    assert g.raw_cuda_graph() == raw               # keep_graph keeps it after the dump
    with pytest.raises(ValueError, match="NUL"):
        g.debug_dump("a\0b")


def test_debug_dump_without_debug_mode_warns(sm):
    g = sm.CUDAGraph()
    with pytest.warns(UserWarning, match=r"debug not enabled, set with \[graph\].enable_debug_mode\(\)"):
        g.debug_dump("/nonexistent/x.dot")


def test_external_events_become_record_and_wait_nodes(sm, rt, tmp_path):
    s = sm.Stream()
    e = sm.Event(external=True)
    g = sm.CUDAGraph(keep_graph=True)

    def body():
        e.record(s)
        e.wait(s)
    _capture(sm, g, s, body)
    path = tmp_path / "e.dot"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.debug_dump(str(path))
    dot = path.read_text()
    assert "EVENT_RECORD" in dot and "WAIT_EVENT" in dot
    with sm.stream(s):
        g.replay()
    e.synchronize()
    assert e.query()


def test_python_host_functions_are_refused_during_capture(sm, rt):
    s = sm.Stream()
    g = sm.CUDAGraph()
    sm.set_stream(s)
    g.capture_begin()
    with pytest.raises(RuntimeError, match="cannot be captured into a CUDA graph"):
        s.launch_host_func(lambda: None)
    assert rt.cudaStreamIsCapturing(s.cuda_stream) == 1   # the capture goes on
    g.capture_end()


@pytest.mark.devices(2)
def test_replay_from_another_thread_on_a_non_current_device(sm, mem, twin):
    dev = twin.mod("_device")
    s = sm.Stream(device=1)
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    seen = {}

    def worker():
        dev.set_current_device(0)
        hin[:] = 42
        g.replay()                                 # on device 1's current stream (its default stream)
        seen["device"] = dev.current_device()
        sm.default_stream(1).synchronize()
        seen["ok"] = bool((hout == 42).all())
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == {"device": 0, "ok": True}


def test_destruction_while_a_replay_is_queued(sm, mem, rt):
    s = sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    gate = _fx.Gate()
    gate.block(rt, s)
    hin[:] = 77
    with sm.stream(s):
        g.replay()
    g.reset()
    del g
    gc.collect()
    gate.open()
    s.synchronize()
    assert (hout == 77).all()


def test_capture_replay_reset_cycles_are_flat(sm, mem, live):
    """10^4 capture / replay / reset cycles of one instance: graph, executable and capture counts and
    allocations flat."""
    s = sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    g.reset()
    before = live()
    for k in range(10000):
        _capture(sm, g, s, body)
        with sm.stream(s):
            g.replay()
        g.reset()
    s.synchronize()
    assert live() == before


@pytest.mark.devices(3)
@pytest.mark.parametrize("sym", ["cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiateWithFlags",
                                 "cudaGraphLaunch"])
def test_fault_injection_on_graph_entry_points(sm, mem, emu, live, twin, sym):
    s = sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    before = live()
    dev = twin.mod("_device")
    dev.set_current_device(2)
    g = sm.CUDAGraph()
    prev = sm.current_stream(0)
    emu.accelEmuSetFail(f"{sym}:1".encode())
    sm.set_stream(s)
    try:
        with pytest.raises(CudaError):
            g.capture_begin()
            body()
            g.capture_end()
            g.replay()
    finally:
        emu.accelEmuSetFail(None)
    assert sm.current_stream(0) == s and dev.current_device() == 0     # the guard restored the device
    g.reset()
    sm.set_stream(prev)
    dev.set_current_device(0)
    s.synchronize()
    assert live() == before


def test_copy_pickle_and_gc_of_a_capturing_graph(sm, rt, live):
    g = sm.CUDAGraph()
    for op in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="CUDA graph"):
            op(g)
    s = sm.Stream()
    before = live()
    sm.set_stream(s)
    g.capture_begin()
    del g
    gc.collect()
    assert rt.cudaStreamIsCapturing(s.cuda_stream) == 0 and live() == before


def test_graph_context_manager_restores_the_stream(mem):
    s0 = cuda.current_stream()
    hin, hout = np.zeros(N, np.uint8), np.zeros(N, np.uint8)
    a = cuda.alloc(N)
    cuda.synchronize()
    g = cuda.CUDAGraph()
    with cuda.graph(g):
        assert cuda.is_current_stream_capturing() and cuda.current_stream() != s0
        cs = cuda.current_stream()                 # a buffer's copies default to its own stream
        a.copy_from_host(hin, stream=cs)
        a.copy_to_host(hout, stream=cs)
    assert cuda.current_stream() == s0 and not cuda.is_current_stream_capturing()
    hin[:] = 5
    g.replay()
    cuda.synchronize()
    assert (hout == 5).all()
    g2 = cuda.CUDAGraph()
    with pytest.raises(ZeroDivisionError):
        with cuda.graph(g2, pool=g.pool()):
            1 / 0
    assert cuda.current_stream() == s0
    assert cuda.cudart().cudaStreamIsCapturing(cuda.graph.default_capture_stream.cuda_stream) == 0
    h = cuda.graph_pool_handle()
    assert h[0] == 0 and h[1] > 0


def test_fork_child_gets_the_fork_error(subprocess_python):
    r = subprocess_python("""
import os, accel.cuda as cuda
s = cuda.Stream(); g = cuda.CUDAGraph()
with cuda.stream(s):
    g.capture_begin(); cuda.alloc(8).memset(1); g.capture_end()
pid = os.fork()
if pid == 0:
    try:
        g.replay(); os._exit(1)
    except RuntimeError as e:
        os._exit(0 if "Cannot re-initialize CUDA in forked subprocess" in str(e) else 2)
_, st = os.waitpid(pid, 0)
g.replay(); cuda.synchronize()
print(os.waitstatus_to_exitcode(st))
""")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == "0"


# -- the emulator's runtime API directly ---------------------------------------------------------------------

def test_emulator_capture_info_modes_and_explicit_graphs(sm, emu):
    L = emu
    P = ctypes.c_void_p
    s, s2 = sm.Stream(), sm.Stream()
    mode = ctypes.c_int(2)
    assert L.cudaThreadExchangeStreamCaptureMode(ctypes.byref(mode)) == 0 and mode.value == 0
    assert L.cudaThreadExchangeStreamCaptureMode(ctypes.byref(mode)) == 0 and mode.value == 2
    assert L.cudaStreamBeginCapture(P(0), 0) == UNSUPPORTED            # not on the legacy stream
    assert L.cudaStreamBeginCapture(P(s.cuda_stream), 3) == 1
    assert L.cudaStreamBeginCapture(P(s.cuda_stream), 0) == 0
    assert L.cudaStreamBeginCapture(P(s.cuda_stream), 0) == 401        # already capturing
    L.cudaGetLastError()
    st, cid, graph, deps, n = ctypes.c_int(), ctypes.c_ulonglong(), P(), P(), ctypes.c_size_t()
    fn = HOSTFN(lambda _: None)
    L.cudaLaunchHostFunc(P(s.cuda_stream), fn, None)
    assert L.cudaStreamGetCaptureInfo(P(s.cuda_stream), ctypes.byref(st), ctypes.byref(cid), ctypes.byref(graph),
                                      ctypes.byref(deps), None, ctypes.byref(n)) == 0
    assert st.value == 1 and cid.value > 0 and graph.value and n.value == 1
    node = ctypes.cast(deps, ctypes.POINTER(P))[0]
    t = ctypes.c_int()
    assert L.cudaGraphNodeGetType(P(node), ctypes.byref(t)) == 0 and t.value == 3   # host node
    assert L.cudaGraphDestroy(graph) == 401                            # being captured
    out = P()
    assert L.cudaStreamEndCapture(P(s2.cuda_stream), ctypes.byref(out)) == 401       # not capturing
    assert L.cudaStreamEndCapture(P(s.cuda_stream), ctypes.byref(out)) == 0 and out.value == graph.value
    assert L.cudaGraphNodeGetType(P(node), ctypes.byref(t)) == 0
    assert L.cudaGraphDestroy(out) == 0
    assert L.cudaGraphNodeGetType(P(node), ctypes.byref(t)) == 400     # its nodes went with it
    # explicit construction
    g, a, b = P(), P(), P()
    assert L.cudaGraphCreate(ctypes.byref(g), 0) == 0
    assert L.cudaGraphAddEmptyNode(ctypes.byref(a), g, None, 0) == 0
    assert L.cudaGraphAddEmptyNode(ctypes.byref(b), g, ctypes.byref(a), 1) == 0
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(0)) == 0
    assert L.cudaGraphUpload(x, P(s.cuda_stream)) == 0 and L.cudaGraphLaunch(x, P(s.cuda_stream)) == 0
    assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(4)) == 1    # device launch: no
    assert L.cudaGraphExecDestroy(x) == 0 and L.cudaGraphExecDestroy(x) == 400
    assert L.cudaGraphDestroy(g) == 0 and L.cudaGraphDestroy(g) == 400
    L.cudaGetLastError()


def test_emulator_event_recorded_in_capture(sm, emu):
    L = emu
    P = ctypes.c_void_p
    s, s2 = sm.Stream(), sm.Stream()
    e = sm.Event()
    e.record(s2)
    assert L.cudaStreamBeginCapture(P(s.cuda_stream), 2) == 0
    L.cudaEventRecord(P(e.cuda_event), P(s.cuda_stream))
    assert L.cudaEventQuery(P(e.cuda_event)) == CAPTURED_EVENT
    out = P()
    assert L.cudaStreamEndCapture(P(s.cuda_stream), ctypes.byref(out)) == 0
    assert L.cudaEventQuery(P(e.cuda_event)) == 0                      # stands for no work once it ended
    assert L.cudaGraphDestroy(out) == 0
    L.cudaGetLastError()


def _pool_used(rt, mem, d=0):
    gc.collect()
    rt.cudaDeviceSynchronize()                      # earlier buffers' stream-ordered frees have landed
    return rt.cudaMemPoolGetAttribute(mem.pool_handle(d), 7)      # cudaMemPoolAttrUsedMemCurrent


@pytest.mark.parametrize("order", ["free_then_reset", "reset_then_free"])
def test_graph_memory_is_released_once_freed_and_reset(sm, mem, rt, live, order):
    s = sm.Stream()
    s.synchronize()
    before = live()
    used0 = _pool_used(rt, mem)
    g = sm.CUDAGraph()
    held = []
    _capture(sm, g, s, lambda: held.append(mem.alloc(4096, stream=s)))
    assert _pool_used(rt, mem) > used0
    if order == "free_then_reset":
        held.pop().free()
        s.synchronize()
        assert _pool_used(rt, mem) > used0          # the graph still holds the block
        g.reset()
    else:
        g.reset()
        assert (held[0].memset(1, stream=s), s.synchronize()) and True   # still the buffer's memory
        held.pop().free()
    s.synchronize()
    assert _pool_used(rt, mem) == used0 and live() == before


def test_replay_touching_a_freed_buffer_raises_and_queues_nothing(sm, mem, rt):
    s = sm.Stream()
    hout = np.full(N, 1, np.uint8)
    held = []

    def body():
        b = mem.alloc(N, stream=s)
        held.append(b)
        b.memset(9, stream=s)
        b.copy_to_host(hout, stream=s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    held.pop().free()
    s.synchronize()
    with sm.stream(s):
        with pytest.raises(CudaError) as exc:
            g.replay()
        assert exc.value.code == 1 and sm.current_stream() == s
    s.synchronize()
    assert (hout == 1).all()                        # nothing ran


def test_a_graph_buffer_freed_after_a_replay_is_made_again_by_the_next(sm, mem, rt):
    # CUDA's graph memory (issue 31): an allocation the graph leaves to the user is theirs after a launch; once
    # they free it, the next launch (accel instantiates with AutoFreeOnLaunch, as torch) makes it again at the
    # same address.  The emulator used to report it freed (cudaErrorInvalidValue).
    s = sm.Stream()
    hout = np.zeros(N, np.uint8)
    held = []

    def body():
        b = mem.alloc(N, stream=s)
        held.append(b)
        b.memset(7, stream=s)
        b.copy_to_host(hout, stream=s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    b = held.pop()
    with sm.stream(s):
        g.replay()
        g.replay()                                  # auto free on launch: the live allocation is no obstacle
    s.synchronize()
    assert (hout == 7).all()
    ptr = b.ptr
    b.free()
    hout[:] = 0
    with sm.stream(s):
        g.replay()
    s.synchronize()
    assert (hout == 7).all()
    g.reset()
    with pytest.raises(CudaError):                  # the last launch's allocation: released by reset()
        rt.cudaFree(ptr)


def test_a_graph_buffer_remade_by_a_replay_is_released_by_reset(sm, mem, live):
    # Red team of issue 31: after free() of a buffer the graph allocated (after a replay), the next replay makes
    # the allocation again; nothing in accel owns it then (the DeviceBuffer is closed, memory_allocated() no
    # longer counts it) and reset() / dropping the graph left it allocated: every such cycle leaked the buffer's
    # size of device memory, which only a raw cudaFree of the old address could release.
    s = sm.Stream()
    s.synchronize()
    before = live()[3]
    for _ in range(3):
        held = []
        g = sm.CUDAGraph()
        _capture(sm, g, s, lambda: held.append(mem.alloc(N, stream=s)))
        b = held.pop()
        with sm.stream(s):
            g.replay()
        s.synchronize()
        b.free()
        with sm.stream(s):
            g.replay()                              # made again
        s.synchronize()
        g.reset()
        del g, b
    assert live()[3] == before


def test_a_graph_buffer_freed_after_a_replay_still_stops_another_graph_using_it(sm, mem, rt):
    # The exemption of the test above is the allocating graph's alone: a second graph whose copies use that
    # buffer did not allocate it, so its free (after the first graph's replay) makes the second graph's
    # replays raise, and one freed before its graph's first replay keeps that graph's replays raising too.
    s = sm.Stream()
    hout = np.zeros(N, np.uint8)
    held = []
    g1, g2 = sm.CUDAGraph(), sm.CUDAGraph()
    _capture(sm, g1, s, lambda: held.append(mem.alloc(N, stream=s)))
    b = held.pop()
    with sm.stream(s):
        g1.replay()

    def body():
        b.memset(5, stream=s)
        b.copy_to_host(hout, stream=s)
    _capture(sm, g2, s, body)
    b.free()
    s.synchronize()
    with sm.stream(s):
        g1.replay()                                 # its own allocation: made again
        with pytest.raises(CudaError) as exc:
            g2.replay()
    s.synchronize()
    assert (hout == 0).all() and _gc.FREED_SINCE_CAPTURE in str(exc.value)
    ptr = b.ptr
    g2.reset()
    g1.reset()
    with pytest.raises(CudaError):                  # the last launch's allocation: released by reset()
        rt.cudaFree(ptr)


def test_buffer_freed_inside_the_capture_belongs_to_the_graph(sm, mem, rt, live):
    s = sm.Stream()
    s.synchronize()
    before = live()
    used0 = _pool_used(rt, mem)
    hout = np.zeros(N, np.uint8)

    def body():
        b = mem.alloc(N, stream=s)
        b.memset(4, stream=s)
        b.copy_to_host(hout, stream=s)
        b.free()                                    # a free node: the graph owns the memory now
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    with sm.stream(s):
        g.replay()
    s.synchronize()
    assert (hout == 4).all() and _pool_used(rt, mem) > used0
    g.reset()
    assert _pool_used(rt, mem) == used0 and live() == before


def _raw_graph(L, s):
    """Begin / a memset / end on stream ``s`` through the emulator's C API: (graph, buffer) or raises."""
    P = ctypes.c_void_p
    buf = P()
    assert L.cudaMalloc(ctypes.byref(buf), 64) == 0
    try:
        err = L.cudaStreamBeginCapture(P(s), 0)
        assert err == 0, err
        L.cudaMemsetAsync(buf, 1, 64, P(s))
        g = P()
        err = L.cudaStreamEndCapture(P(s), ctypes.byref(g))
        assert err == 0, err
        return g, buf
    except BaseException:
        L.cudaFree(buf)
        raise


_ENTRY_POINTS = ["cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaStreamGetCaptureInfo", "cudaGraphCreate",
                 "cudaGraphAddEmptyNode", "cudaGraphGetNodes", "cudaGraphNodeGetType", "cudaGraphDebugDotPrint",
                 "cudaGraphInstantiate", "cudaGraphInstantiateWithFlags", "cudaGraphUpload", "cudaGraphLaunch",
                 "cudaGraphExecDestroy", "cudaGraphDestroy"]


@pytest.mark.parametrize("sym", _ENTRY_POINTS)
def test_fault_injection_on_every_emulator_graph_entry_point(sm, emu, live, sym, tmp_path):
    """Each entry point armed to fail: it returns its fault code, records it as the last error, changes
    nothing (no capture left open, no handle leaked beyond the one a failed destroy keeps), and the same
    call succeeds once disarmed."""
    L, P = emu, ctypes.c_void_p
    s = sm.Stream().cuda_stream
    st, n, t = ctypes.c_int(), ctypes.c_size_t(), ctypes.c_int()
    g, buf = _raw_graph(L, s)
    nodes = (P * 1)()
    n.value = 1
    assert L.cudaGraphGetNodes(g, nodes, ctypes.byref(n)) == 0
    x = P()
    assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(0)) == 0
    capturing = sym == "cudaStreamEndCapture"      # ending needs a capture, which the failed end keeps
    if capturing:
        assert L.cudaStreamBeginCapture(P(s), 0) == 0
    before = live()
    new_g, node, new_x = P(), P(), P()
    calls = {
        "cudaStreamBeginCapture": lambda: L.cudaStreamBeginCapture(P(s), 0),
        "cudaStreamEndCapture": lambda: L.cudaStreamEndCapture(P(s), ctypes.byref(new_g)),
        "cudaStreamGetCaptureInfo": lambda: L.cudaStreamGetCaptureInfo(P(s), ctypes.byref(st), None, None, None,
                                                                       None, None),
        "cudaGraphCreate": lambda: L.cudaGraphCreate(ctypes.byref(new_g), 0),
        "cudaGraphAddEmptyNode": lambda: L.cudaGraphAddEmptyNode(ctypes.byref(node), g, None, 0),
        "cudaGraphGetNodes": lambda: L.cudaGraphGetNodes(g, None, ctypes.byref(n)),
        "cudaGraphNodeGetType": lambda: L.cudaGraphNodeGetType(P(nodes[0]), ctypes.byref(t)),
        "cudaGraphDebugDotPrint": lambda: L.cudaGraphDebugDotPrint(g, str(tmp_path / "x.dot").encode(), 0),
        "cudaGraphInstantiate": lambda: L.cudaGraphInstantiate(ctypes.byref(new_x), g, ctypes.c_ulonglong(0)),
        "cudaGraphInstantiateWithFlags": lambda: L.cudaGraphInstantiateWithFlags(ctypes.byref(new_x), g,
                                                                                ctypes.c_ulonglong(1)),
        "cudaGraphUpload": lambda: L.cudaGraphUpload(x, P(s)),
        "cudaGraphLaunch": lambda: L.cudaGraphLaunch(x, P(s)),
        "cudaGraphExecDestroy": lambda: L.cudaGraphExecDestroy(x),
        "cudaGraphDestroy": lambda: L.cudaGraphDestroy(g),
    }
    L.cudaGetLastError()
    assert L.accelEmuSetFail(f"{sym}:1".encode()) == 0
    err = calls[sym]()
    L.accelEmuSetFail(None)
    assert err in (2, 999) and L.cudaGetLastError() == err
    assert live() == before and L.cudaStreamIsCapturing(P(s), ctypes.byref(st)) == 0 and st.value == capturing
    assert calls[sym]() == 0                        # works once disarmed
    if sym == "cudaStreamBeginCapture":
        assert L.cudaStreamEndCapture(P(s), ctypes.byref(new_g)) == 0
    for h, destroy in ((new_x, L.cudaGraphExecDestroy), (new_g, L.cudaGraphDestroy)):
        if h.value:
            assert destroy(h) == 0
    if sym != "cudaGraphExecDestroy":
        assert L.cudaGraphExecDestroy(x) == 0
    if sym != "cudaGraphDestroy":
        assert L.cudaGraphDestroy(g) == 0
    L.cudaStreamSynchronize(P(s))
    assert L.cudaFree(buf) == 0
    L.cudaGetLastError()


def test_concurrent_replays_from_many_threads(sm, mem):
    """One graph replayed from 8 threads at once, each onto its own stream: every replay runs, none is
    lost or corrupted."""
    s = sm.Stream()
    hin, hout, bufs, body = _pipeline(sm, mem, s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    hin[:] = 3
    errors = []

    def worker():
        try:
            mine = sm.Stream()
            with sm.stream(mine):
                for _ in range(200):
                    g.replay()
            mine.synchronize()
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append(repr(e))
    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and (hout == 3).all()


def test_the_legacy_stream_cannot_join_a_capture(sm, emu):
    """A wait of the legacy default stream on an event recorded in a capture would fork the capture into
    the stream every blocking stream synchronises with: cudaErrorStreamCaptureImplicit, capture invalidated."""
    L, P = emu, ctypes.c_void_p
    s = sm.Stream()
    e = sm.Event()
    e.record(s)                                     # creates the event, outside the capture
    s.synchronize()
    g, st = P(), ctypes.c_int()
    assert L.cudaStreamBeginCapture(P(s.cuda_stream), 0) == 0
    try:
        assert L.cudaEventRecord(P(e.cuda_event), P(s.cuda_stream)) == 0
        assert L.cudaStreamWaitEvent(P(0), P(e.cuda_event), 0) == 906
        assert L.cudaStreamIsCapturing(P(s.cuda_stream), ctypes.byref(st)) == 0 and st.value == 2
        assert L.cudaStreamIsCapturing(P(0), ctypes.byref(st)) == 0 and st.value == 0
    finally:
        assert L.cudaStreamEndCapture(P(s.cuda_stream), ctypes.byref(g)) == 901 and not g.value
        L.cudaGetLastError()


try:
    import cuda.bindings as _bindings  # noqa: F401  (as: the name cuda stays accel.cuda)
    HAVE_BINDINGS = True
except ImportError:
    HAVE_BINDINGS = False

DRIVER_CAPTURE = """
import numpy as np
from cuda.bindings import driver as d
import accel.cuda as ac

def ok(res):
    res = res if isinstance(res, tuple) else (res,)
    assert int(res[0]) == 0, res
    return res[1] if len(res) == 2 else res[1:]

ok(d.cuInit(0))
ok(d.cuCtxSetCurrent(ok(d.cuDevicePrimaryCtxRetain(ok(d.cuDeviceGet(0))))))
s = ok(d.cuStreamCreate(1))
cs = ac.ExternalStream(int(s))                  # accel queues the work, the driver API captures it
buf, host = ac.alloc(256, stream=cs), np.zeros(256, np.uint8)
ok(d.cuStreamBeginCapture(s, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL))
status, cid, g0 = ok(d.cuStreamGetCaptureInfo(s))[:3]
buf.memset(7, stream=cs)
buf.copy_to_host(host, stream=cs)
g = ok(d.cuStreamEndCapture(s))
nodes = ok(d.cuGraphGetNodes(g))[1]
params = d.CUDA_GRAPH_INSTANTIATE_PARAMS()
x = ok(d.cuGraphInstantiateWithParams(g, params))
out = [int(status), int(g) == int(g0), nodes, int(params.result_out)]
for _ in range(3):
    host[:] = 0
    ok(d.cuGraphLaunch(x, s))
    ok(d.cuStreamSynchronize(s))
    out.append(int(host.sum()))
err = d.cuGraphLaunch(x, s)[0]                 # ACCEL_EMU_FAIL arms its 4th call
out += [int(err), ac.cudart().cudaPeekAtLastError()]
ok(d.cuGraphExecDestroy(x)); ok(d.cuGraphDestroy(g))
print(out)
"""


@pytest.mark.skipif(not HAVE_BINDINGS, reason="cuda-bindings is not installed")
def test_driver_api_capture_through_cuda_bindings():
    """The libcuda.so.1 stand-in's capture and graph entry points (found by cuGetProcAddress, as
    cuda.bindings resolves them): begin / capture info / end, instantiate with params, launch, with accel
    queuing the captured work on the same stream; a fault hook by name; the runtime's last error untouched."""
    import subprocess
    import sys
    import tempfile
    env = {k: v for k, v in os.environ.items() if k not in ("ACCEL_CUDART", "LD_PRELOAD")}
    env["ACCEL_EMU_FAIL"] = "cuGraphLaunch:4"
    proc = subprocess.run([sys.executable, "-m", "accel", "emu", "--", sys.executable, "-c", DRIVER_CAPTURE],
                          env=env, capture_output=True, text=True, timeout=120, cwd=tempfile.gettempdir())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1, True, 2, 0, 1792, 1792, 1792, 999, 0]"


def test_emulator_2d_copies_and_synchronous_copies_during_capture(sm, emu):
    """A 2-D copy is captured with its pitches and replayed as recorded; a synchronous cudaMemcpy /
    cudaMemset during a global capture is prohibited (900) and invalidates it."""
    L, P = emu, ctypes.c_void_p
    s = sm.Stream().cuda_stream
    dev = P()
    assert L.cudaMalloc(ctypes.byref(dev), 64) == 0
    src = (ctypes.c_ubyte * 64)(*range(64))
    out = (ctypes.c_ubyte * 64)()
    g, x = P(), P()
    try:
        assert L.cudaMemsetAsync(dev, 0, 64, P(s)) == 0 and L.cudaStreamSynchronize(P(s)) == 0
        assert L.cudaStreamBeginCapture(P(s), 0) == 0
        # 4 rows of 8 bytes, 16 apart on the host, 8 apart on the device
        assert L.cudaMemcpy2DAsync(dev, ctypes.c_size_t(8), src, ctypes.c_size_t(16), ctypes.c_size_t(8),
                                   ctypes.c_size_t(4), 1, P(s)) == 0
        assert L.cudaMemcpyAsync(out, dev, ctypes.c_size_t(64), 2, P(s)) == 0
        assert L.cudaStreamEndCapture(P(s), ctypes.byref(g)) == 0
        assert L.cudaGraphInstantiate(ctypes.byref(x), g, ctypes.c_ulonglong(0)) == 0
        assert L.cudaGraphLaunch(x, P(s)) == 0 and L.cudaStreamSynchronize(P(s)) == 0
        want = [src[16 * r + c] for r in range(4) for c in range(8)] + [0] * 32
        assert list(out) == want
        assert L.cudaStreamBeginCapture(P(s), 0) == 0
        assert L.cudaMemcpy(out, dev, ctypes.c_size_t(64), 2) == UNSUPPORTED
        g2 = P()
        assert L.cudaStreamEndCapture(P(s), ctypes.byref(g2)) == INVALIDATED
        assert L.cudaStreamBeginCapture(P(s), 0) == 0
        assert L.cudaMemset(dev, 1, ctypes.c_size_t(8)) == UNSUPPORTED
        assert L.cudaStreamEndCapture(P(s), ctypes.byref(g2)) == INVALIDATED
    finally:
        if x.value:
            L.cudaGraphExecDestroy(x)
        if g.value:
            L.cudaGraphDestroy(g)
        L.cudaFree(dev)
        L.cudaGetLastError()


@pytest.mark.devices(2)
def test_set_device_during_a_capture_follows_torch(sm, mem, twin, live, emu):
    """torch.cuda.set_device during a capture: torch (c10::cuda::SetDevice) calls cudaSetDevice, which CUDA
    allows while capturing, so set_device itself never fails; the same device changes nothing, and another
    device makes capture_end fail as torch's does (it compares the current device's current stream with
    the capture stream), here with a message naming both devices; the capture stays open and ends once the
    device is back."""
    dev = twin.mod("_device")
    st = ctypes.c_int()

    def capturing():
        assert emu.cudaStreamIsCapturing(ctypes.c_void_p(s.cuda_stream), ctypes.byref(st)) == 0
        return st.value == 1
    s = sm.Stream(device=0)
    buf = mem.alloc(N, stream=s)
    host = np.zeros(N, np.uint8)
    s.synchronize()
    g = sm.CUDAGraph()
    sm.set_stream(s)
    g.capture_begin()
    buf.memset(5, stream=s)
    dev.set_current_device(0)                               # the same device: nothing changes
    assert capturing() and sm.current_stream() is s
    dev.set_current_device(1)                               # another device: allowed, as in torch
    assert dev.current_device() == 1 and capturing()
    with pytest.raises(RuntimeError, match=r"^Capture must end on the same stream it began on\. The current "
                                           r"device is 1 but the capture began on a stream of device 0: "
                                           r"set_device\(0\)"):
        g.capture_end()
    assert dev.current_device() == 1 and capturing()        # the failed call changed nothing
    dev.set_current_device(0)
    buf.copy_to_host(host, stream=s)
    g.capture_end()
    sm.set_stream(sm.default_stream(0))
    g.replay()
    sm.default_stream(0).synchronize()
    assert (host == 5).all()
    g.reset()
    del buf
    # the graph context manager: the capture it could not end is left to reset(), nothing stays open
    before = live()
    g2 = cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="The current device is 1"):
        with cuda.graph(g2):
            cuda.set_device(1)
    cuda.set_device(0)
    g2.reset()
    assert live() == before
