"""Red-team probes of CUDA graphs (issue 20) through the public API, on both twins and the emulator: each test
pins a defect found by attacking CUDAGraph / graph() / the emulator's capture and graph entry points."""
import ctypes
import gc
import importlib.util
import os
import pathlib
import threading
import time

import pytest

from accel.errors import CudaError

_spec = importlib.util.spec_from_file_location("memory_fixtures", pathlib.Path(__file__).with_name("memory_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)
mem, rt = _fx.mem, _fx.rt
sm, live = _fx.sm, _fx.live          # the graph tests' stream module and live-handle counts


@pytest.fixture
def emu():
    """The emulator's library through a handle of this module's own: raw calls here pass plain ctypes values,
    whatever argtypes other test modules set on the shared handle's functions.  An armed fault is cleared."""
    L = ctypes.CDLL(_fx.emu_lib()._name)
    L.accelEmuSetFail.argtypes = [ctypes.c_char_p]
    L.accelEmuLiveAllocations.restype = ctypes.c_size_t
    yield L
    L.accelEmuSetFail(None)

pytestmark = pytest.mark.emu_only


class _Worker:
    """A thread that runs the calls given to it (``run(fn)`` returns fn's result or raises its exception): the
    same OS thread for every call, as CUDA's per-thread capture rules need."""

    def __init__(self):
        import queue
        self._q, self._r = queue.Queue(), queue.Queue()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()

    def _loop(self):
        while True:
            fn = self._q.get()
            if fn is None:
                return
            try:
                self._r.put((True, fn()))
            except BaseException as e:  # noqa: BLE001 - handed back to run()
                self._r.put((False, e))

    def run(self, fn):
        self._q.put(fn)
        ok, v = self._r.get(timeout=60)
        if not ok:
            raise v
        return v

    def close(self):
        self._q.put(None)
        self._t.join(60)


def _end_raw(L, h):
    """End whatever capture stream handle ``h`` is in (a test's cleanup), dropping its graph."""
    g = ctypes.c_void_p()
    L.cudaStreamEndCapture(ctypes.c_void_p(h), ctypes.byref(g))
    L.cudaGetLastError()
    if g.value:
        L.cudaGraphDestroy(g)


def _capture_on(w, sm, s, buf, **kw):
    """A graph whose capture on ``s`` (of a memset of ``buf``) the worker ``w``'s thread began and left open,
    the thread's current stream back to device 0's default."""
    def begin():
        sm.set_stream(s)
        g = sm.CUDAGraph()
        g.capture_begin(**kw)
        buf.memset(1, stream=s)
        sm.set_stream(sm.default_stream(0))
        return g
    return w.run(begin)


def test_reset_from_another_thread_keeps_a_capture_it_cannot_end(sm, mem, rt, emu, live):
    s = sm.Stream()
    buf = mem.alloc(64, stream=s)
    s.synchronize()
    before = live()
    w = _Worker()
    g = _capture_on(w, sm, s, buf)
    try:
        with pytest.raises(RuntimeError, match="capture_begin"):
            g.reset()                               # CUDA lets only the capturing thread end it: say so
        assert "capturing" in repr(g) and rt.cudaStreamIsCapturing(s.cuda_stream) == 1
    finally:
        w.run(lambda: (sm.set_stream(s), g.reset(), sm.set_stream(sm.default_stream(0))))   # ... which still can
        if rt.cudaStreamIsCapturing(s.cuda_stream):      # the defect lost it: end it raw, for the next tests
            w.run(lambda: _end_raw(emu, s.cuda_stream))
        w.close()
    assert "empty" in repr(g) and rt.cudaStreamIsCapturing(s.cuda_stream) == 0
    del g
    assert live() == before
    sm.current_stream().synchronize()


def test_replays_racing_reset_and_recapture_leak_nothing(sm, mem, live):
    s = sm.Stream()
    buf = mem.alloc(64, stream=s)
    s.synchronize()
    before = live()
    g = sm.CUDAGraph()

    def capture():
        prev = sm.current_stream(0)
        sm.set_stream(s)
        try:
            g.capture_begin(capture_error_mode="relaxed")
            buf.memset(1, stream=s)
            g.capture_end()
        finally:
            sm.set_stream(prev)
    capture()
    stop = []
    unexpected = []

    def replayer():
        mine = sm.Stream()
        with sm.stream(mine):
            while not stop:
                try:
                    g.replay()
                except CudaError:               # the executable graph destroyed under the launch
                    pass
                except RuntimeError as e:       # torch's "without a preceding successful capture"
                    if "preceding successful capture" not in str(e):
                        unexpected.append(repr(e))
            mine.synchronize()
    threads = [threading.Thread(target=replayer) for _ in range(3)]
    for t in threads:
        t.start()
    main_errors = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5:
        try:
            g.reset()
            capture()
        except Exception as e:  # noqa: BLE001 - reported below
            main_errors.append(repr(e))
    stop.append(1)
    for t in threads:
        t.join(30)
    g.reset()
    sm.current_stream().synchronize()
    assert main_errors == [] and unexpected == []
    assert live() == before


def test_launches_of_one_graph_on_two_streams_do_not_overlap(sm, rt):
    log, lock = [], threading.Lock()

    def slow(arg):
        with lock:
            log.append(("start", arg))
        time.sleep(0.05)
        with lock:
            log.append(("end", arg))
    fn = _fx.HOSTFN(slow)
    s, s1, s2 = sm.Stream(), sm.Stream(), sm.Stream()
    g = sm.CUDAGraph()
    prev = sm.current_stream(0)
    sm.set_stream(s)
    try:
        g.capture_begin()
        rt.cudaLaunchHostFunc(s.cuda_stream, ctypes.cast(fn, ctypes.c_void_p).value, 1)
        g.capture_end()
    finally:
        sm.set_stream(prev)
    for st in (s1, s2, s1):
        with sm.stream(st):
            g.replay()
    s1.synchronize()
    s2.synchronize()
    assert log == [("start", 1), ("end", 1)] * 3


def test_legacy_stream_work_while_a_blocking_stream_captures_is_refused(sm, mem, emu, live):
    L, P = emu, ctypes.c_void_p
    buf = mem.alloc(64)
    sm.current_stream().synchronize()
    bs = P()
    assert L.cudaStreamCreate(ctypes.byref(bs)) == 0                 # flags 0: a blocking stream
    before = live()
    try:
        assert L.cudaStreamBeginCapture(bs, 2) == 0                  # relaxed: no sync rule in the way
        assert L.cudaMemsetAsync(P(buf.ptr), 1, ctypes.c_size_t(64), bs) == 0
        assert L.cudaMemsetAsync(P(buf.ptr), 2, ctypes.c_size_t(64), P(0)) == 906
        assert L.cudaGetLastError() == 906
        st = ctypes.c_int()
        assert L.cudaStreamIsCapturing(bs, ctypes.byref(st)) == 0 and st.value == 2     # invalidated
        g = P()
        assert L.cudaStreamEndCapture(bs, ctypes.byref(g)) == 901 and not g.value
        L.cudaGetLastError()
        nb = P()                                                     # a non-blocking stream's capture is no
        assert L.cudaStreamCreateWithFlags(ctypes.byref(nb), 1) == 0  # business of the legacy stream's
        assert L.cudaStreamBeginCapture(nb, 2) == 0
        assert L.cudaMemsetAsync(P(buf.ptr), 3, ctypes.c_size_t(64), P(0)) == 0
        assert L.cudaStreamEndCapture(nb, ctypes.byref(g)) == 0 and g.value
        assert L.cudaGraphDestroy(g) == 0 and L.cudaStreamDestroy(nb) == 0
    finally:
        _end_raw(L, bs.value)
        assert L.cudaDeviceSynchronize() == 0
        L.cudaStreamDestroy(bs)
    assert live() == before


_UPLOAD_SCRIPT = """
import ctypes as c, os
from accel import emu
rt = c.CDLL(emu.cudart_path(), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
cu = c.CDLL(emu.driver_path(), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
rt.accelEmuSetFail.argtypes = [c.c_char_p]
rt.accelEmuLiveGraphExecs.restype = c.c_int
assert cu.cuInit(0) == 0
ctx = c.c_void_p()
assert cu.cuDevicePrimaryCtxRetain(c.byref(ctx), 0) == 0 and cu.cuCtxSetCurrent(ctx) == 0
class Params(c.Structure):   # CUDA_GRAPH_INSTANTIATE_PARAMS
    _fields_ = [("flags", c.c_ulonglong), ("hUploadStream", c.c_void_p), ("hErrNode_out", c.c_void_p),
                ("result_out", c.c_int)]
g, node, s = c.c_void_p(), c.c_void_p(), c.c_void_p()
assert cu.cuGraphCreate(c.byref(g), 0) == 0 and cu.cuGraphAddEmptyNode(c.byref(node), g, None, c.c_size_t(0)) == 0
assert rt.cudaStreamCreate(c.byref(s)) == 0
out = []
for fault, stream in ((None, c.c_void_p(0xdead0)), (b"cudaGraphUpload:1", s)):
    x, p = c.c_void_p(), Params(2, stream, None, 0)          # CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD
    rt.accelEmuSetFail(fault)
    r = cu.cuGraphInstantiateWithParams(c.byref(x), g, c.byref(p))
    rt.accelEmuSetFail(None)
    out.append((r, p.result_out, x.value, rt.accelEmuLiveGraphExecs()))
x, p = c.c_void_p(), Params(2, s, None, 0)
assert cu.cuGraphInstantiateWithParams(c.byref(x), g, c.byref(p)) == 0 and p.result_out == 0 and x.value
out.append(rt.accelEmuLiveGraphExecs())
print(out)
"""


def test_driver_instantiate_with_a_failed_upload_leaks_nothing(subprocess_python):
    r = subprocess_python(_UPLOAD_SCRIPT)
    assert r.returncode == 0, r.stderr
    out = eval(r.stdout.strip().splitlines()[-1])
    assert out[0] == (400, 1, None, 0)               # an invalid upload stream: CUDA_ERROR_INVALID_HANDLE
    assert out[1] == (999, 1, None, 0)               # the upload's fault
    assert out[2] == 1


_FIFO_SCRIPT = """
import os, sys, threading, time, warnings
import accel.cuda as cuda
warnings.simplefilter("ignore")
fifo = sys.argv[1] if len(sys.argv) > 1 else {fifo!r}
s = cuda.Stream()
buf = cuda.alloc(64, stream=s)
s.synchronize()
g = cuda.CUDAGraph(keep_graph=True)
with cuda.stream(s):
    g.capture_begin()
    buf.memset(1, stream=s)
    g.capture_end()
os.mkfifo(fifo)
dumper = threading.Thread(target=lambda: g.debug_dump(fifo), daemon=True)
probe_done = threading.Event()

def probe():                                        # an unrelated thread's CUDA calls
    other = cuda.Stream()
    cuda.alloc(64, stream=other).memset(2, stream=other)
    other.synchronize()
    probe_done.set()
dumper.start()
time.sleep(0.2)                                     # the dump waits for a reader
threading.Thread(target=probe, daemon=True).start()
ok = probe_done.wait(5)
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)     # let the dump finish, whatever happened
data = b""
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        time.sleep(0.01)
        continue
    if not chunk:                                   # no writer yet, or the dump is done
        if not dumper.is_alive():
            break
        time.sleep(0.01)
    data += chunk
os.close(fd)
print(ok, b"digraph" in data)
"""


def test_debug_dump_to_a_blocking_path_does_not_stall_other_threads(twin, subprocess_python, tmp_path):
    import subprocess
    try:
        r = subprocess_python(_FIFO_SCRIPT.format(fifo=str(tmp_path / "dump.dot")),
                              env={"ACCEL_BACKEND": twin.name}, timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("the process froze while debug_dump() waited for the FIFO's reader")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"], "another thread's CUDA calls waited for the DOT dump's reader"


def _attr_errors(mod):
    """What setting / deleting attributes of a CUDAGraph and of a subclass instance does on twin ``mod``."""
    class Mine(mod.CUDAGraph):
        def __init__(self):
            super().__init__(keep_graph=True)
            self.tag = "mine"                       # a subclass's own attribute

    out = [Mine().tag]
    g = mod.CUDAGraph()
    for op in (lambda: setattr(g, "x", 1), lambda: setattr(g, "_keep", False), lambda: setattr(g, "replay", None),
               lambda: delattr(g, "x"), lambda: setattr(g, "__class__", int), lambda: delattr(g, "_exec")):
        try:
            op()
            out.append(None)
        except (AttributeError, TypeError) as e:
            out.append((type(e).__name__, str(e).replace("accel._native.", "accel.").replace("accel._python.", "accel.")))
    m = Mine()
    m.capture_begin.__self__                        # the subclass still works as a graph
    out.append(repr(m))
    return out


def test_cuda_graph_attributes_and_subclasses_match_across_twins(both_twins):
    native, python = (t.mod("_stream") for t in both_twins)
    got = _attr_errors(python)
    assert got == _attr_errors(native)
    assert got[0] == "mine"


def test_dropping_a_graph_whose_capture_another_thread_began_warns(sm, mem, rt, emu, live):
    """Dropped on a thread that cannot end its capture (CUDA: only the capturing thread can), the graph says
    so instead of losing the capture silently; that thread can still end it."""
    s = sm.Stream()
    buf = mem.alloc(64, stream=s)
    s.synchronize()
    before = live()
    w = _Worker()
    g = _capture_on(w, sm, s, buf)
    try:
        with pytest.warns(UserWarning, match="dropped with its capture still open.*capture_begin"):
            del g
            gc.collect()
        assert rt.cudaStreamIsCapturing(s.cuda_stream) == 1
    finally:
        w.run(lambda: _end_raw(emu, s.cuda_stream))
        w.close()
    assert rt.cudaStreamIsCapturing(s.cuda_stream) == 0 and live() == before


def test_per_thread_default_stream_capture_is_not_lost_from_another_thread(sm, mem, rt, emu, live):
    buf = mem.alloc(64)
    sm.current_stream().synchronize()
    before = live()
    w = _Worker()
    pt = sm.ExternalStream(2)                       # cudaStreamPerThread
    g = _capture_on(w, sm, pt, buf, capture_error_mode="relaxed")
    try:
        for call in (g.reset, lambda: (sm.set_stream(pt), g.capture_end())):
            with pytest.raises(RuntimeError, match="per-thread default stream"):
                call()
            sm.set_stream(sm.default_stream(0))
            assert "capturing" in repr(g) and w.run(lambda: rt.cudaStreamIsCapturing(2)) == 1
        w.run(lambda: (sm.set_stream(pt), g.capture_end(), sm.set_stream(sm.default_stream(0))))
        assert "instantiated" in repr(g)
        g.reset()
    finally:
        sm.set_stream(sm.default_stream(0))
        w.run(lambda: _end_raw(emu, 2))
        w.close()
    del g
    assert live() == before


def test_a_refused_event_record_keeps_the_previous_record(sm, emu):
    L, P = emu, ctypes.c_void_p
    gate = _fx.Gate()
    busy, bs, ev = P(sm.Stream().cuda_stream), P(), P()
    assert L.cudaStreamCreate(ctypes.byref(bs)) == 0 and L.cudaEventCreateWithFlags(ctypes.byref(ev), 2) == 0
    try:
        assert L.cudaLaunchHostFunc(busy, P(gate.ptr), None) == 0
        assert L.cudaEventRecord(ev, busy) == 0 and L.cudaEventQuery(ev) == 600       # cudaErrorNotReady
        L.cudaGetLastError()
        assert L.cudaStreamBeginCapture(bs, 2) == 0
        assert L.cudaEventRecord(ev, P(0)) == 906                                      # refused
        L.cudaGetLastError()
        _end_raw(L, bs.value)
        assert L.cudaEventQuery(ev) == 600                                             # still the busy record
        L.cudaGetLastError()
    finally:
        gate.open()
        _end_raw(L, bs.value)
        assert L.cudaStreamSynchronize(busy) == 0 and L.cudaEventQuery(ev) == 0
        L.cudaEventDestroy(ev)
        L.cudaStreamDestroy(bs)


def test_a_failed_instantiation_at_capture_end_is_not_retried_by_replay(sm, mem, emu, live):
    """Without keep_graph, replay() never instantiates (torch's rule; a replay racing capture_end() leaked an
    executable graph): after capture_end()'s instantiation failed, replay() raises torch's error and an explicit
    instantiate() recovers; nothing leaks."""
    s = sm.Stream()
    buf = mem.alloc(64, stream=s)
    s.synchronize()
    before = live()
    g = sm.CUDAGraph()
    prev = sm.current_stream(0)
    sm.set_stream(s)
    try:
        g.capture_begin()
        buf.memset(1, stream=s)
        emu.accelEmuSetFail(b"cudaGraphInstantiateWithFlags:1")
        try:
            with pytest.raises(CudaError):
                g.capture_end()
        finally:
            emu.accelEmuSetFail(None)
        assert sm.current_stream(0) == s
    finally:
        sm.set_stream(prev)
    with pytest.raises(RuntimeError, match="without a preceding successful capture"):
        g.replay()
    g.instantiate()
    g.replay()
    sm.current_stream(0).synchronize()
    g.reset()
    assert live() == before
