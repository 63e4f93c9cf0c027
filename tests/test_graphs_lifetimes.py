"""Graphs and buffer lifetimes (issue 31, items 1-7), on both twins: a replay after a captured buffer was
freed, is_current_stream_capturing of an invalidated capture, objects made with ``__new__`` alone and where the
graph warnings point.  Each case also checks what else changed (other buffers' bytes, the counters, the current
stream)."""
import importlib.util
import pathlib
import warnings

import numpy as np
import pytest

import accel.cuda as cuda
from accel import _memory_common as _mc
from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
mem, rt, emu = _fx.mem, _fx.rt, _fx.emu
sm, live = _fx.sm, _fx.live

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
