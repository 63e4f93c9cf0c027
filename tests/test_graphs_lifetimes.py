"""Graphs and buffer lifetimes (issue 31, items 1-7), on both twins: a replay after a captured buffer was
freed, host arrays of captured copies, frees while a DLPack consumer holds the memory, an allocation that does
not fit inside a capture, is_current_stream_capturing of an invalidated capture, copies on the current
stream, objects made with ``__new__`` alone and where the graph warnings point.  Each case also checks what
else changed (other buffers' bytes, the counters, the current stream)."""
import gc
import importlib.util
import pathlib
import warnings
import weakref

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _graph_common as _gc
from accel import _memory_common as _mc
from accel import _memory_interop as _mi
from accel.errors import CudaError, OutOfMemoryError

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
mem, rt, emu = _fx.mem, _fx.rt, _fx.emu
sm, live = _fx.sm, _fx.live
Gate = _fx.Gate

pytestmark = pytest.mark.emu_only

N = 256
INVALID_VALUE, UNSUPPORTED = 1, 900


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


def _bytes(buf):
    """The bytes of a DeviceBuffer, read on its own stream (synchronous)."""
    return buf.copy_to_host(stream=buf.stream)


# -- 1. a replay after a buffer the graph uses was freed ------------------------------------------------------

@pytest.mark.parametrize("how", ["free", "collected"])
def test_replay_after_a_captured_buffer_was_freed_raises_and_spares_its_successor(sm, mem, how):
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    a.memset(0, stream=s)
    hout = np.zeros(N, np.uint8)

    def body():
        a.memset(7, stream=s)
        a.copy_to_host(hout, stream=s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    ptr = a.ptr
    if how == "free":
        a.free()
    else:
        del a
        gc.collect()
    s.synchronize()
    b = mem.alloc(N, stream=s)                      # the pool hands the freed block to the next allocation
    assert b.ptr == ptr
    b.memset(1, stream=s)
    s.synchronize()
    before = mem.counters(0)
    with sm.stream(s):
        with pytest.raises(CudaError) as exc:
            g.replay()
        assert sm.current_stream() == s
    assert exc.value.code == INVALID_VALUE and str(exc.value) == "CUDA error: " + _gc.FREED_SINCE_CAPTURE + (
        "\nSearch for `cudaErrorInvalidValue' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES"
        ".html for more information.")
    s.synchronize()
    assert (_bytes(b) == 1).all() and (hout == 0).all()        # nothing ran: the new buffer kept its bytes
    assert mem.counters(0) == before
    # reset() and a new capture make the graph usable again
    g.reset()
    _capture(sm, g, s, lambda: b.memset(4, stream=s))
    with sm.stream(s):
        g.replay()
    s.synchronize()
    assert (_bytes(b) == 4).all()
    b.free()


def test_a_buffer_freed_by_the_graph_itself_does_not_stop_its_replays(sm, mem):
    s = sm.Stream()
    hout = np.zeros(N, np.uint8)

    def body():
        b = mem.alloc(N, stream=s)
        b.memset(3, stream=s)
        b.copy_to_host(hout, stream=s)
        b.free()                                    # a free node of the graph's own memory
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    with sm.stream(s):
        g.replay()
    s.synchronize()
    assert (hout == 3).all()
    g.reset()


def test_emulator_tells_a_freed_allocation_from_its_successor_at_launch(sm, mem, rt):
    # the copy is captured through the raw binding, which accel does not track: the emulator's own check
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    s.synchronize()
    g = sm.CUDAGraph()
    _capture(sm, g, s, lambda: rt.cudaMemsetAsync(a.ptr, 7, N, s.cuda_stream))
    ptr = a.ptr
    a.free()
    s.synchronize()
    b = mem.alloc(N, stream=s)
    assert b.ptr == ptr                             # the same address, another allocation
    b.memset(1, stream=s)
    s.synchronize()
    with sm.stream(s):
        with pytest.raises(CudaError) as exc:
            g.replay()
    assert exc.value.code == INVALID_VALUE
    s.synchronize()
    assert (_bytes(b) == 1).all() and rt.cudaGetLastError() == 0
    g.reset()
    b.free()


# -- 2. host arrays of captured copies ----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["buffer", "array"])
def test_host_arrays_of_captured_copies_live_as_long_as_the_graph(sm, mem, kind):
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    x = a if kind == "buffer" else mem.as_array(a, np.dtype(np.uint8), (N,))
    other = mem.alloc(N, stream=s)
    other.memset(2, stream=s)
    s.synchronize()
    refs = {}

    def body():
        src = np.full(N, 5, np.uint8)               # a temporary: nothing but the graph keeps it
        refs["src"] = weakref.ref(src)
        x.copy_from_host(src, stream=s)
        out = x.copy_to_host(stream=s)              # no out=: the node writes this array at every replay
        refs["out"] = weakref.ref(out)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    gc.collect()
    assert refs["src"]() is not None and refs["out"]() is not None
    with sm.stream(s):
        for _ in range(3):
            g.replay()
    s.synchronize()
    assert (refs["out"]() == 5).all() and (_bytes(a) == 5).all() and (_bytes(other) == 2).all()
    g.reset()
    gc.collect()
    assert refs["src"]() is None and refs["out"]() is None
    a.free()
    other.free()


def test_copy_to_host_without_out_in_a_foreign_capture_is_refused(sm, mem, rt):
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    s.synchronize()
    rt.cudaStreamBeginCapture(s.cuda_stream, 0)     # a capture no accel CUDAGraph began
    try:
        with pytest.raises(RuntimeError, match="no accel CUDAGraph began"):
            a.copy_to_host(stream=s)
        with pytest.raises(RuntimeError, match="no accel CUDAGraph began"):
            mem.as_array(a, np.dtype(np.uint8), (N,)).copy_to_host(stream=s)
        assert rt.cudaStreamIsCapturing(s.cuda_stream) == 1
    finally:
        graph = rt.cudaStreamEndCapture(s.cuda_stream)
    try:
        assert rt.cudaGraphGetNodes(graph, 0, 0) == 0     # nothing was queued
    finally:
        rt.cudaGraphDestroy(graph)
    a.free()


def test_staged_copies_of_strided_arrays_are_refused_during_capture(sm, mem, rt):
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    s.synchronize()
    view = mem.as_array(a, np.dtype(np.uint8), (N // 2,), (2,))
    g = sm.CUDAGraph()

    def body():
        with pytest.raises(RuntimeError, match="synchronous host staging step"):
            view.copy_to_host(stream=s)
        with pytest.raises(RuntimeError, match="synchronous host staging step"):
            view.copy_from_host(np.zeros(N // 2, np.uint8), stream=s)
        assert rt.cudaStreamIsCapturing(s.cuda_stream) == 1      # the capture goes on
        a.memset(1, stream=s)
    _capture(sm, g, s, body)
    g.reset()
    a.free()


# -- 3. free() while a DLPack consumer holds the memory ------------------------------------------------------

@pytest.mark.parametrize("kind", ["buffer", "array"])
def test_free_while_a_dlpack_consumer_holds_the_memory_leaves_it_to_the_consumer(sm, mem, kind):
    d = 0
    s = sm.current_stream(d)
    buf = mem.alloc(N, device=d)
    buf.memset(3, stream=s)
    x = buf if kind == "buffer" else mem.as_array(buf, np.dtype(np.uint8), (N,))
    y = _mi.from_dlpack(mem, sm, x, kind == "array")        # accel's own consumer
    base, count = mem.memory_allocated(d), mem.counters(d)["count"]
    x.free()
    assert x.closed and buf.closed and not y.closed
    assert mem.memory_allocated(d) == base and mem.counters(d)["count"] == count   # still the consumer's
    z = mem.alloc(N, device=d)                      # would have been given the freed block
    assert z.ptr != y.ptr
    z.memset(9, stream=s)
    assert (y.copy_to_host(stream=s).view(np.uint8).reshape(-1) == 3).all()
    y.free()                                        # the consumer's deleter releases the memory
    gc.collect()
    assert mem.memory_allocated(d) == base and mem.counters(d)["count"] == count    # (z took its place)
    assert not _mi._exports
    z.free()
    assert mem.memory_allocated(d) == base - N


def test_free_with_an_unconsumed_capsule_waits_for_the_capsule(sm, mem):
    d = 0
    buf = mem.alloc(N, device=d)
    base = mem.memory_allocated(d)
    cap = buf.__dlpack__(max_version=(1, 0))
    buf.free()
    assert buf.closed and mem.memory_allocated(d) == base
    z = mem.alloc(N, device=d)
    assert z.ptr != buf.ptr
    del cap
    gc.collect()
    assert mem.memory_allocated(d) == base and not _mi._exports
    z.free()
    assert mem.memory_allocated(d) == base - N


# -- 4. an allocation that does not fit, inside a capture -----------------------------------------------------

def test_out_of_memory_inside_a_capture_raises_and_keeps_the_capture(sm, mem, rt):
    s = sm.Stream()
    a = mem.alloc(N, stream=s)
    s.synchronize()
    base = mem.counters(0)
    hout = np.zeros(N, np.uint8)

    def body():
        with pytest.raises(OutOfMemoryError, match="^CUDA out of memory"):
            mem.alloc(1 << 50, stream=s)
        assert rt.cudaStreamIsCapturing(s.cuda_stream) == 1      # not invalidated by a synchronisation
        a.memset(6, stream=s)
        a.copy_to_host(hout, stream=s)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    c = mem.counters(0)
    assert c["ooms"] == base["ooms"] + 1 and c["retries"] == base["retries"] and c["bytes"] == base["bytes"]
    with sm.stream(s):
        g.replay()
    s.synchronize()
    assert (hout == 6).all()
    g.reset()
    a.free()


# -- 5. is_current_stream_capturing of an invalidated capture -------------------------------------------------

def test_is_current_stream_capturing_while_the_capture_is_invalidated():
    s = cuda.Stream()
    g = cuda.CUDAGraph()
    with cuda.stream(s):
        assert cuda.is_current_stream_capturing() is False
        g.capture_begin()
        try:
            assert cuda.is_current_stream_capturing() is True
            with pytest.raises(CudaError) as exc:
                s.synchronize()                     # illegal during capture: invalidates it
            assert exc.value.code == UNSUPPORTED
            assert cuda.cudart().cudaStreamIsCapturing(s.cuda_stream) == 2
            assert cuda.is_current_stream_capturing() is True       # torch: anything but "not capturing"
        finally:
            g.reset()
        assert cuda.is_current_stream_capturing() is False


# -- 6. copies and memsets on the current stream ---------------------------------------------------------------

@pytest.mark.parametrize("kind", ["buffer", "array"])
def test_copies_inside_a_capture_default_to_the_capturing_stream(sm, mem, kind):
    s = sm.Stream()
    a = mem.alloc(N, stream=sm.default_stream(0))   # the buffer's own stream is not the capturing one
    a.memset(0, stream=a.stream)
    b = mem.alloc(N, stream=a.stream)
    b.memset(0, stream=a.stream)
    a.stream.synchronize()
    x, y = (a, b) if kind == "buffer" else (mem.as_array(a, np.dtype(np.uint8), (N,)),
                                             mem.as_array(b, np.dtype(np.uint8), (N,)))
    hin, hout = np.full(N, 8, np.uint8), np.zeros(N, np.uint8)

    def body():
        x.memset(7)
        x.copy_to_host(hout)
        y.copy_from_host(hin)
        y.copy_from(x)
    g = sm.CUDAGraph()
    _capture(sm, g, s, body)
    assert (hout == 0).all() and (_bytes(a) == 0).all() and (_bytes(b) == 0).all()   # recorded, not run
    assert sm.current_stream(0) == sm.default_stream(0)
    with sm.stream(s):
        g.replay()
    s.synchronize()
    assert (hout == 7).all() and (_bytes(a) == 7).all() and (_bytes(b) == 7).all()
    g.reset()
    a.free()
    b.free()


def test_copies_inside_with_stream_run_on_that_stream_and_are_recorded(sm, mem, rt):
    s2 = sm.Stream()
    a = mem.alloc(N, stream=sm.default_stream(0))
    a.memset(0, stream=a.stream)
    a.stream.synchronize()
    gate = Gate()
    gate.block(rt, s2)
    try:
        with sm.stream(s2):
            a.memset(5)                             # queued on s2, behind the gate
        assert sm.current_stream(0) == sm.default_stream(0)
        assert (_bytes(a) == 0).all()               # not run on the buffer's stream
        a.free()                                    # the free waits for s2 (recorded as record_stream does)
        b = mem.alloc(N, stream=sm.default_stream(0))
        b.memset(1, stream=b.stream)
    finally:
        gate.open()
    s2.synchronize()
    b.stream.synchronize()
    assert (_bytes(b) == 1).all()
    b.free()


def test_the_deviations_table_says_copies_use_the_current_stream():
    table = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "deviations.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| copies on a buffer |"))
    assert "the current stream" in row and "buffer's own stream by default" not in row


# -- 7. objects made with __new__ alone; where the graph warnings point ---------------------------------------

_SWEEP = r"""
import importlib, inspect, pkgutil, sys, warnings
warnings.simplefilter("ignore")
import accel.cuda                      # the device parsers registered, as in use
twin = sys.argv[1] if len(sys.argv) > 1 else {twin!r}
pkg = importlib.import_module(f"accel._{{twin}}")
SKIP = {{"__init__", "__new__", "__init_subclass__", "__subclasshook__", "__class__", "__getattribute__",
        "__setattr__", "__delattr__", "__getattr__", "__dir__", "__reduce_ex__", "__format__", "__sizeof__"}}
seen = []
for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
    mod = importlib.import_module(f"accel._{{twin}}.{{info.name}}")
    for cname, cls in sorted(vars(mod).items()):
        if not inspect.isclass(cls) or cls.__module__ != mod.__name__:
            continue
        try:
            obj = cls.__new__(cls)
        except TypeError:
            seen.append(f"{{info.name}}.{{cname}}: refused")
            continue
        seen.append(f"{{info.name}}.{{cname}}")
        for name in sorted(set(dir(cls)) - SKIP):
            try:
                v = getattr(obj, name)
                if callable(v) and not inspect.isclass(v):
                    v = v(None, None, None) if name == "__exit__" else v()
            except Exception:          # an exception is a clear answer; a crash is not
                continue
            idx = getattr(v, "index", None) if getattr(v, "type", None) == "cuda" else None
            if isinstance(idx, int) and not -1 <= idx < 1024:
                raise SystemExit(f"{{cname}}.{{name}}: device index {{idx}} read from uninitialised memory")
print("\n".join(seen))
"""


def test_every_class_of_the_twin_is_safe_when_init_is_bypassed(twin, subprocess_python):
    r = subprocess_python(_SWEEP.format(twin=twin.name), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-2000:]
    classes = r.stdout.split()
    for expected in ("_memory.DeviceArray", "_memory.DeviceBuffer", "_stream.Stream", "_stream.ExternalStream",
                     "_stream.Event"):
        assert expected in classes, classes


def test_buffers_and_arrays_made_with_new_alone_are_closed_and_name_what_they_lack(mem):
    buf = mem.DeviceBuffer.__new__(mem.DeviceBuffer)
    arr = mem.DeviceArray.__new__(mem.DeviceArray)
    for obj, what in ((buf, "DeviceBuffer"), (arr, "DeviceArray")):
        assert obj.closed and obj.stream is None and obj.ptr == 0
        with pytest.raises(ValueError) as exc:
            obj.device
        assert str(exc.value) == _mc.NOT_MADE.format(what)
        with pytest.raises(ValueError) as exc:
            obj.__dlpack_device__()
        assert str(exc.value) == _mc.NOT_MADE.format(what)
        with pytest.raises(ValueError, match="freed"):
            obj.memset(0)
        obj.free()
    assert buf.nbytes == 0 and arr.shape is None and repr(arr.buffer) == repr(buf)


def test_stream_made_with_new_alone_before_any_cuda_use(twin, subprocess_python):
    r = subprocess_python(f"""
import accel._{twin.name}._stream as m
for cls in (m.Stream, m.ExternalStream):
    s = cls.__new__(cls)
    for name in ("priority", "query", "synchronize", "cuda_stream", "device", "__repr__"):
        try:
            v = getattr(s, name)
            v = v() if callable(v) else v
        except Exception as e:
            v = type(e).__name__
        print(cls.__name__, name, v)
""")
    assert r.returncode == 0, r.stderr[-2000:]


def test_graph_warnings_point_at_the_caller(sm, tmp_path):
    s = sm.Stream()
    g = sm.CUDAGraph(keep_graph=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _capture(sm, g, s, lambda: None)            # empty: capture_end warns
        g.debug_dump(str(tmp_path / "g.dot"))       # debug_dump's warnings
    assert len(caught) >= 2
    for w in caught:
        assert w.filename == __file__, (w.filename, w.lineno, str(w.message))
    g.reset()
